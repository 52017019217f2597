"""The judge providers JudgeScope knows out of the box, each registered (``evalcore.registry.register_provider``):
an OpenAI-compatible endpoint's preset address and the environment variable that holds its key. The model is chosen
by the user. Every menu and command-line choice of a provider reads ``evalcore.registry.PROVIDERS``; an installed
package adds its own through the ``judgescope.providers`` entry-point group (docs/extending.md).

This module imports no HTTP client, so building the command line's parser stays cheap.
"""

from __future__ import annotations

from evalcore.registry import register_provider

register_provider("openai", base_url="https://api.openai.com/v1", api_key_env="OPENAI_API_KEY", label="OpenAI",
                  docs="https://platform.openai.com/docs/api-reference/chat/create")
# Azure: base_url is the resource endpoint, model is the DEPLOYMENT name.
register_provider("azure", base_url="https://YOUR-RESOURCE.openai.azure.com", api_key_env="AZURE_OPENAI_API_KEY",
                  label="Azure OpenAI", api_version="2024-10-21",
                  docs="https://learn.microsoft.com/azure/foundry/openai/how-to/reasoning")
register_provider("vllm", base_url="http://localhost:8000/v1", api_key_env="VLLM_API_KEY", label="vLLM",
                  docs="https://docs.vllm.ai/en/latest/features/reasoning_outputs/")
register_provider("ollama", base_url="http://localhost:11434/v1", api_key_env="OLLAMA_API_KEY", label="Ollama",
                  docs="https://docs.ollama.com/api/openai-compatibility")
register_provider("llamacpp", base_url="http://localhost:8080/v1", api_key_env="LLAMACPP_API_KEY",
                  label="llama.cpp server", docs="https://github.com/ggml-org/llama.cpp/blob/master/tools/server/README.md")
# Anthropic's OpenAI SDK compatibility layer: n must be 1, log-probs ignored; the contract is learned from the
# refusals (evalcore.judge.contract), nothing assumed.
register_provider("anthropic", base_url="https://api.anthropic.com/v1", api_key_env="ANTHROPIC_API_KEY",
                  label="Anthropic", docs="https://docs.anthropic.com/en/api/openai-sdk")
register_provider("gemini", base_url="https://generativelanguage.googleapis.com/v1beta/openai",
                  api_key_env="GEMINI_API_KEY", label="Google Gemini", docs="https://ai.google.dev/gemini-api/docs/openai")
# OpenRouter: reasoning returned in message.reasoning
register_provider("openrouter", base_url="https://openrouter.ai/api/v1", api_key_env="OPENROUTER_API_KEY",
                  label="OpenRouter", docs="https://openrouter.ai/docs/api-reference/overview")
# a LiteLLM proxy: the operator's own server, its master key
register_provider("litellm", base_url="http://localhost:4000/v1", api_key_env="LITELLM_API_KEY", label="LiteLLM proxy",
                  docs="https://docs.litellm.ai/docs/proxy/quick_start")
