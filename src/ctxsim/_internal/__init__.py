"""ctxsim's private modules: no compatibility promised."""
