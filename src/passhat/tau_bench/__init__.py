"""τ-bench in passhat: a user's checkout of sierra-research/tau-bench as passhat suites.

``passhat cases import --format tau-bench PATH`` writes, for each environment of the checkout (retail,
airline), a suite folder whose domain runs τ-bench's own tool classes on a JSON-shaped view of the
trial's SQLite world (:mod:`.domain`), and one case per task (:mod:`.importer`). Nothing of τ-bench is
shipped with passhat; its code is imported from the checkout when a suite's domain loads
(:mod:`.checkout`). Decisions and alternatives: docs/design/013-tau-bench.md.
"""
