"""What a run costs: each step's cost record, their sums per iteration, prices and scale.

``record`` is the record a step run leaves in the store (``RunLayout.costs(k)``),
``meter`` measures one, ``aggregate`` reads an iteration's back, ``pricing`` turns them
into money, ``scale`` extrapolates them, ``simulate`` models iterations on a cluster from
them (``simulate_inputs`` reads its inputs), and ``cli`` is ``openforge report``
(docs/operations.md, "What a run costs"). Nothing here is imported by ``openforge
--help`` but the command's own module.
"""
