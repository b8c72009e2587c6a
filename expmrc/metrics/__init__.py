"""Metrics: the leaderboard's own and the ones reported beside it, registered by name in `registry`.

Importing the package registers every metric, so `--help`, reports, the signature and the tests
enumerate them from `expmrc.metrics.registry.METRICS`.
"""

# each module registers its metrics on import; the leaderboard's comes first
from expmrc.metrics import leaderboard  # noqa: F401
from expmrc.metrics import coupling  # noqa: F401
from expmrc.metrics import squad  # noqa: F401
from expmrc.metrics import cmrc2018  # noqa: F401
from expmrc.metrics import grounding  # noqa: F401
