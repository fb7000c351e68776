"""τ²-bench in passhat: a user's checkout of sierra-research/tau2-bench as passhat suites.

``passhat cases import --format tau2-bench PATH`` writes, for each domain of the checkout (retail,
airline, telecom), a suite folder whose domain runs τ²'s own environment — its toolkits, their
databases, its sync hook — on passhat's world (:mod:`.domain`, :mod:`.store`), and one case per task
(:mod:`.importer`). Nothing of τ² ships with passhat: its code is imported from the checkout when a
suite's domain loads (:mod:`.checkout`). Decisions and alternatives: docs/design/029-tau2-bench.md.
"""
