"""The model interface shared by every service that drafts text."""

from libs.model.client import (
    ChatCompletions,
    Model,
    ModelUnavailable,
    Prompt,
    Scripted,
    Turn,
    model_from_env,
)

__all__ = [
    "ChatCompletions",
    "Model",
    "ModelUnavailable",
    "Prompt",
    "Scripted",
    "Turn",
    "model_from_env",
]
