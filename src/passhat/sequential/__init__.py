"""Sequential runs: a gate evaluated at planned looks, with α spent across them (docs/gates.md, design 027).

``design`` (the looks and the spending) and ``spending`` (Lan–DeMets boundaries) are pure numerics that the
gate imports; ``rounds`` runs the trials look by look and sits above the gate and the runner. Nothing is
imported here, so the gate can use the numerics without loading the runner.
"""
