"""The models mtvbench asks: the backend interface (:mod:`.backend`), backends by spec prefix
(:mod:`.registry`), their settings (:mod:`.settings`), the call path of every remote backend (:mod:`.resilience`),
the ask-check-ask-again loop (:mod:`.ask`), one module per backend (OpenAI-compatible servers, Gemini, local
Hugging Face and vLLM models, the baselines) and the paper's models as presets (:mod:`.presets`).
"""
