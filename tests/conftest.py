"""The suite's Hypothesis settings: no deadline (a shared 2-core CI machine has pauses that say nothing of the code),
no example database (a run depends on the checkout only), and no health check failing a slow generator."""

from hypothesis import HealthCheck, settings

settings.register_profile("ctxsim-suite", deadline=None, database=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile("ctxsim-suite")
