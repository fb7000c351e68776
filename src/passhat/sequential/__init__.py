"""A sequential design's numerics: the looks, α spending across them, and the boundaries (design 027).

``design`` (the looks and the spending) and ``spending`` (Lan–DeMets boundaries by recursive integration)
import nothing of passhat's above the foundations, so the summary and the gate can both use them; running
the trials look by look is ``gate.rounds``.
"""
