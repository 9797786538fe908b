"""What the assistant knows: its own knowledge file, the user's local date and time, the user profile.

``prompt_knowledge`` gathers the pieces for one user and session, ``knowledge_block`` renders
them as one prompt section within a token budget. Every prompt that talks to the user (instruct
turns, home chat, workflow reviews) includes that block: call ``knowledge_block_for`` with the
database session, the user and the session's platform.
"""

from mojodex_core.knowledge.context import (
    ASSISTANT_KNOWLEDGE_FILE,
    DEFAULT_KNOWLEDGE_TOKENS,
    PromptKnowledge,
    knowledge_block,
    knowledge_block_for,
    prompt_knowledge,
)
from mojodex_core.knowledge.profile import PROFILE_FIELDS, ProfileError, get_profile, profile_view, update_profile

__all__ = [
    "ASSISTANT_KNOWLEDGE_FILE",
    "DEFAULT_KNOWLEDGE_TOKENS",
    "PROFILE_FIELDS",
    "ProfileError",
    "PromptKnowledge",
    "get_profile",
    "knowledge_block",
    "knowledge_block_for",
    "profile_view",
    "prompt_knowledge",
    "update_profile",
]
