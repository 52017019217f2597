"""Ready-made criteria and per-dataset configs: the papers' own prompts.

``PRESETS[dataset][dimension]`` holds G-Eval's criteria (000 Appendix A and the released prompt files): task
introduction, criteria definition (without the "Coherence (1-5) -" head, which ``GEvalConfig.criteria_line``
writes), rating scale and evaluation steps.

* SummEval (``nlpyang/geval`` prompts): coherence, consistency and relevance are rated 1-5, fluency **1-3** (the
  humans rated it 1-5: rank correlations are unaffected, raw-score charts are not). The fluency prompt has no
  evaluation steps and shows only the summary (``GEvalConfig.omit_source_for``).
* Topical-Chat (the G-Eval prompts as released by Chiang & Lee 2023): naturalness, coherence, engagingness 1-3,
  groundedness 0-1. Their "Evaluation Crieteria" typo is not kept; "naturally written??" is.

``SHEN_CRITERIA["summeval"][dimension]`` holds 003's definitions: ``criteria_for`` gives them to every method but
G-Eval on SummEval (they are scale-free, where G-Eval's carry its own 1-3 / 1-5 anchors, and 002 and 004 published
no SummEval prompts of their own). ``FED_CRITERIA`` holds 002's FED definitions. ``criteria_for(method, dataset, dimension)`` picks the one a method's paper
used; ``config_for(method, dataset)`` returns a method's config with the dataset's labels and, where the paper
published per-dimension prompts, those prompts (003's for SummEval; 002's for FED).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from evalcore.types import Criteria
from evalcore.methods import paper_prompts as pp

_SUMMEVAL_INTRO = (
    "You will be given one summary written for a news article.\n\n"
    "Your task is to rate the summary on one metric.\n\n"
    "Please make sure you read and understand these instructions carefully. Please keep this document open while "
    "reviewing, and refer to it as needed."
)
_SUMMEVAL_INTRO_CONSISTENCY = (
    "You will be given a news article. You will then be given one summary written for this article.\n\n"
    "Your task is to rate the summary on one metric.\n\n"
    "Please make sure you read and understand these instructions carefully. Please keep this document open while "
    "reviewing, and refer to it as needed."
)

SUMMEVAL: dict[str, Criteria] = {
    "coherence": Criteria(
        dimension="coherence",
        task_introduction=_SUMMEVAL_INTRO,
        definition=(
            "the collective quality of all sentences. We align this dimension with the DUC quality question of "
            'structure and coherence whereby "the summary should be well-structured and well-organized. The summary '
            "should not just be a heap of related information, but should build from sentence to a coherent body of "
            'information about a topic."'
        ),
        scale_min=1,
        scale_max=5,
        steps=(
            "1. Read the news article carefully and identify the main topic and key points.\n"
            "2. Read the summary and compare it to the news article. Check if the summary covers the main topic and "
            "key points of the news article, and if it presents them in a clear and logical order.\n"
            "3. Assign a score for coherence on a scale of 1 to 5, where 1 is the lowest and 5 is the highest based "
            "on the Evaluation Criteria."
        ),
    ),
    "consistency": Criteria(
        dimension="consistency",
        task_introduction=_SUMMEVAL_INTRO_CONSISTENCY,
        definition=(
            "the factual alignment between the summary and the summarized source. A factually consistent summary "
            "contains only statements that are entailed by the source document. Annotators were also asked to "
            "penalize summaries that contained hallucinated facts."
        ),
        scale_min=1,
        scale_max=5,
        steps=(
            "1. Read the news article carefully and identify the main facts and details it presents.\n"
            "2. Read the summary and compare it to the article. Check if the summary contains any factual errors "
            "that are not supported by the article.\n"
            "3. Assign a score for consistency based on the Evaluation Criteria."
        ),
    ),
    "fluency": Criteria(
        dimension="fluency",
        task_introduction=_SUMMEVAL_INTRO,
        definition=(
            "the quality of the summary in terms of grammar, spelling, punctuation, word choice, and sentence "
            "structure.\n\n"
            "- 1: Poor. The summary has many errors that make it hard to understand or sound unnatural.\n"
            "- 2: Fair. The summary has some errors that affect the clarity or smoothness of the text, but the main "
            "points are still comprehensible.\n"
            "- 3: Good. The summary has few or no errors and is easy to read and follow."
        ),
        scale_min=1,
        scale_max=3,
        steps="",  # 000's fluency prompt has no evaluation steps
    ),
    "relevance": Criteria(
        dimension="relevance",
        task_introduction=_SUMMEVAL_INTRO,
        definition=(
            "selection of important content from the source. The summary should include only important information "
            "from the source document. Annotators were instructed to penalize summaries which contained redundancies "
            "and excess information."
        ),
        scale_min=1,
        scale_max=5,
        steps=(
            "1. Read the summary and the source document carefully.\n"
            "2. Compare the summary to the source document and identify the main points of the article.\n"
            "3. Assess how well the summary covers the main points of the article, and how much irrelevant or "
            "redundant information it contains.\n"
            "4. Assign a relevance score from 1 to 5."
        ),
    ),
}

_TOPICAL_INTRO = (
    "You will be given a conversation between two individuals. You will then be given one potential response for the "
    "next turn in the conversation. The response concerns an interesting fact, which will be provided as well.\n\n"
    "Your task is to rate the responses on one metric.\n\n"
    "Please make sure you read and understand these instructions carefully. Please keep this document open while "
    "reviewing, and refer to it as needed."
)

TOPICAL_CHAT: dict[str, Criteria] = {
    "naturalness": Criteria(
        dimension="naturalness",
        task_introduction=_TOPICAL_INTRO,
        definition=(
            "Is the response naturally written??\n"
            "- A score of 1 (bad) means that the response is unnatural.\n"
            "- A score of 2 (ok) means the response is strange, but not entirely unnatural.\n"
            "- A score of 3 (good) means that the response is natural."
        ),
        scale_min=1,
        scale_max=3,
        steps=(
            "1. Read the conversation between the two individuals.\n"
            "2. Read the potential response for the next turn in the conversation.\n"
            "3. Evaluate the response based on its naturalness, using the provided criteria.\n"
            "4. Assign a rating score of 1, 2, or 3 based on the evaluation."
        ),
    ),
    "coherence": Criteria(
        dimension="coherence",
        task_introduction=_TOPICAL_INTRO,
        definition=(
            "Does the response serve as a valid continuation of the conversation history?\n"
            "- A score of 1 (no) means that the response drastically changes topic or ignores the conversation "
            "history.\n"
            "- A score of 2 (somewhat) means the response refers to the conversation history in a limited capacity "
            "(e.g., in a generic way) and shifts the conversation topic.\n"
            "- A score of 3 (yes) means the response is on topic and strongly acknowledges the conversation history."
        ),
        scale_min=1,
        scale_max=3,
        steps=(
            "1. Read the conversation history.\n"
            "2. Read the potential response.\n"
            "3. Evaluate the coherence of the response based on the conversation history.\n"
            "4. Assign a score of 1, 2, or 3 for coherence."
        ),
    ),
    "engagingness": Criteria(
        dimension="engagingness",
        task_introduction=_TOPICAL_INTRO,
        definition=(
            "Is the response dull/interesting?\n"
            "- A score of 1 (dull) means that the response is generic and dull.\n"
            "- A score of 2 (somewhat interesting) means the response is somewhat interesting and could engage you in "
            "the conversation (e.g., an opinion, thought)\n"
            "- A score of 3 (interesting) means the response is very interesting or presents an interesting fact"
        ),
        scale_min=1,
        scale_max=3,
        steps=(
            "1. Read the conversation, the corresponding fact and the response carefully.\n"
            "2. Rate the response on a scale of 1-3 for engagingness, according to the criteria above."
        ),
    ),
    "groundedness": Criteria(
        dimension="groundedness",
        task_introduction=_TOPICAL_INTRO,
        definition=(
            "given the fact that this response is conditioned on, determine whether this response uses that fact.\n"
            "- A score of 0 (no) means the response does not mention or refer to the fact at all\n"
            "- A score of 1 (yes) means the response uses the fact well"
        ),
        scale_min=0,
        scale_max=1,
        steps=(
            "1. Read the conversation between the two individuals.\n"
            "2. Identify the fact that is provided for the potential response.\n"
            "3. Read the potential response.\n"
            "4. Determine if the potential response uses or mentions the fact.\n"
            "5. Assign a score of 0 or 1 for groundedness based on whether the response uses the fact."
        ),
    ),
}

# QAGS measures consistency of CNN/DM and XSum summaries: G-Eval's SummEval consistency criteria apply as they are
PRESETS: dict[str, dict[str, Criteria]] = {
    "summeval": SUMMEVAL,
    "topical_chat": TOPICAL_CHAT,
    "qags_cnndm": {"consistency": SUMMEVAL["consistency"]},
    "qags_xsum": {"consistency": SUMMEVAL["consistency"]},
}

SHEN_CRITERIA: dict[str, dict[str, Criteria]] = {
    "summeval": {
        d: Criteria(dimension=d, task_introduction="", definition=pp.SHEN_DEFINITIONS[d], scale_min=1, scale_max=5)
        for d in pp.SHEN_DIMENSIONS
    }
}

# 002's FED definitions ("... refers to ..."), 0-100 explicit scale; other dimensions are defined by their prompts
FED_CRITERIA: dict[str, Criteria] = {
    "coherence": Criteria(
        "coherence", "", "the AI's ability to maintain a smooth conversation flow and remain coherent throughout the "
        "conversation.", 0, 100),
    "consistency": Criteria(
        "consistency", "", "how well the AI's responses provide consistent information throughout the conversation.",
        0, 100),
    "depth": Criteria("depth", "", "the AI's ability to discuss topics in depth.", 0, 100),
    "diversity": Criteria("diversity", "", "the AI's ability to provide diverse responses.", 0, 100),
    "error_recovery": Criteria("error_recovery", "", "the AI's ability to recover from errors that it makes.", 0, 100),
    "flexibility": Criteria(
        "flexibility", "", "the AI's ability to adapt to humans and their interests flexibly.", 0, 100),
    "informativeness": Criteria(
        "informativeness", "", "the AI's ability to provide informative responses throughout the conversation.",
        0, 100),
    "inquisitiveness": Criteria("inquisitiveness", "", "the AI's inquisitiveness.", 0, 100),
    "likeability": Criteria("likeability", "", "the AI's likeable personality.", 0, 100),
    "overall": Criteria("overall", "", "the AI's overall performance.", 0, 100),
    "understanding": Criteria("understanding", "", "the AI's ability to understand the human.", 0, 100),
}

# GPTScore instructions for SummEval in the style of 004 §2.2. Only the fluency one is 004's own wording; the
# paper's Table 11 (its other instructions) is not in our copy.
GPTSCORE_SUMMEVAL_INSTRUCTIONS: dict[str, str] = {
    "fluency": "Generate a fluent and grammatical summary for the following text:",
    "coherence": "Generate a coherent and well-structured summary for the following text:",
    "consistency": "Generate a summary consistent with the facts in the following text:",
    "relevance": "Generate a relevant summary with the important points of the following text:",
}

# MT-Bench's criterion for chat and instruction following (Zheng et al. 2023, "Judging LLM-as-a-Judge with MT-Bench
# and Chatbot Arena", Appendix A: its default judge prompts, pairwise and single-answer, ask which answer follows
# the user's instructions and answers the question better, weighing helpfulness, relevance, accuracy, depth,
# creativity and level of detail, and not length; single answers are rated 1 to 10). Written here in our words.
# The paper is not among the bundled papers (../shared/papers); evalcore.methods.mtbench states its prompts.
CHAT_CRITERIA = Criteria(
    dimension="preference",
    task_introduction=("You will be given a user's question or instruction and a response written by an AI "
                       "assistant.\n\nYour task is to rate the response on one metric."),
    definition=("how well the response follows the user's instructions and answers the user's question, judged "
                "on its helpfulness, relevance, accuracy, depth, creativity and level of detail; a longer response "
                "is not better for its length alone."),
    scale_min=1,
    scale_max=10,
)
# the dimension names that mean the annotators' overall preference between two answers (the pairwise importer's
# default is "preference")
OVERALL_PREFERENCE = ("preference", "overall", "overall_preference")

# how texts are named in generic prompts, per dataset
LABELS: dict[str, dict[str, str]] = {
    "summarization": {"source_label": "Article", "output_label": "Summary", "outputs_label": "Summaries"},
    "instruction_following": {"source_label": "Instruction", "output_label": "Response",
                              "outputs_label": "Responses"},
    "topical_chat": {
        "source_label": "Conversation History",
        "output_label": "Response",
        "outputs_label": "Responses",
        "context_label": "Corresponding Fact",
    },
    "fed_dialogue": {
        "source_label": "Context",
        "output_label": "Conversation",
        "outputs_label": "Conversations",
        "block_format": "{label}:\n{text}",
    },
}

_SUMMARIZATION = {"summeval", "qags_cnndm", "qags_xsum", "zhang_pairs"}
_DIALOGUE = {"topical_chat", "fed_dialogue"}
_SHEN_METHODS = {"rts", "mcq", "h2h"}
# Dataset.task words of chat and instruction-following data: the bundled PandaLM and LLMBar ("instruction following
# pairs") and every file the pairwise importer reads ("pairwise preferences": MT-Bench, Chatbot Arena, PandaLM and
# AlpacaEval layouts are all prompts answered by assistants)
_INSTRUCTION_WORDS = ("instruction", "chat", "assistant", "pairwise preferences", "question answering")


def task_kind(dataset_id: str | None, task: str | None) -> str:
    """What the data's texts are: "summarization", "dialogue", "instruction following" (chat assistants' answers to
    prompts), or "" when the task says nothing."""
    t = (task or "").lower()
    if dataset_id in _SUMMARIZATION or "summar" in t:
        return "summarization"
    if dataset_id in _DIALOGUE or "dialogue" in t:
        return "dialogue"
    if any(w in t for w in _INSTRUCTION_WORDS):
        return "instruction following"
    return ""


def chat_criteria(dataset_id: str | None, task: str | None, dimension: str, voted: bool) -> Criteria | None:
    """MT-Bench's criterion (:data:`CHAT_CRITERIA`) for an overall preference the humans voted on between two
    answers of chat or instruction-following data; None otherwise (the dataset's own description then)."""
    if not voted or dimension.strip().lower() not in OVERALL_PREFERENCE:
        return None
    if task_kind(dataset_id, task) != "instruction following":
        return None
    return replace(CHAT_CRITERIA, dimension=dimension)


def fed_dimension(name: str) -> str:
    """Our FED dimension name for a dataset's name ("coherent", "Error recovery" -> "coherence", "error_recovery")."""
    low = name.strip().lower()
    low = pp.FED_ALIASES.get(low, low)
    return low.replace(" ", "_")


def criteria_for(method: str, dataset_id: str, dimension: str) -> Criteria | None:
    """The criteria the method's paper used for this dataset and dimension, or None when there is no preset."""
    if method != "geval" and dataset_id == "summeval" and dimension in SHEN_CRITERIA["summeval"]:
        # 003's definitions are scale-free ("... measures the collective quality of the Summary, whether ..."),
        # G-Eval's carry its own 1-3 / 1-5 anchors; 002 and 004 published no SummEval prompts of their own
        return SHEN_CRITERIA["summeval"][dimension]
    if dataset_id == "fed_dialogue":
        if method not in ("explicit", "implicit", "pairwise", "gptscore"):
            return None  # 002's definitions come with its 0-100 scale; other methods use the dataset's own
        c = FED_CRITERIA.get(fed_dimension(dimension))
        return replace(c, dimension=dimension) if c else None
    return PRESETS.get(dataset_id, {}).get(dimension)


def config_for(method: str, dataset_id: str | None = None, *, task: str | None = None,
               dimensions: list[str] | None = None) -> Any:
    """The method's default config adapted to a dataset: its text labels, and the paper's per-dimension prompts
    where the paper published them for this dataset (003: SummEval RTS/MCQ/H2H; 002: FED explicit, implicit,
    pairwise; 004-style GPTScore instructions for SummEval). ``task`` (Dataset.task) picks labels for user datasets;
    ``dimensions`` (the dataset's names) maps 002's FED prompts onto them."""
    from evalcore.methods import get_method

    m = get_method(method)
    config = m.default_config()
    updates: dict[str, Any] = {}
    if dataset_id in LABELS:
        updates.update(LABELS[dataset_id])
    elif dataset_id in _SUMMARIZATION or task == "summarization":
        updates.update(LABELS["summarization"])
    elif task and "dialogue" in task:
        updates.update(LABELS["topical_chat"])
    elif task_kind(dataset_id, task) == "instruction following":
        # not "Summary" and "Article": 002's and 003's pairwise prompts name the texts by the data's task
        updates.update(LABELS["instruction_following"])
    if method == "geval":
        # G-Eval's prompts name the texts themselves ("Source Text", "Summary"; "Conversation History", "Response")
        if dataset_id == "topical_chat" or (task and "dialogue" in task):
            updates = {"source_label": "Conversation History", "output_label": "Response",
                       "outputs_label": "Responses", "context_label": "Corresponding Fact"}
        else:
            updates = {}
    if method in _SHEN_METHODS and dataset_id == "summeval":
        updates["prompts"] = dict({"rts": pp.SHEN_RTS, "mcq": pp.SHEN_MCQ, "h2h": pp.SHEN_H2H}[method])
    if method == "gptscore" and dataset_id in _SUMMARIZATION:
        updates["instructions"] = dict(GPTSCORE_SUMMEVAL_INSTRUCTIONS)
    if dataset_id == "fed_dialogue" and method in ("explicit", "implicit", "pairwise"):
        source = {"explicit": pp.CHEN_FED_EXPLICIT, "implicit": pp.CHEN_FED_IMPLICIT,
                  "pairwise": pp.CHEN_FED_PAIRWISE}[method]
        names = dimensions or list(source)
        updates["prompts"] = {n: source[fed_dimension(n)] for n in names if fed_dimension(n) in source}
    fields = set(getattr(config, "__dataclass_fields__", {}))
    return replace(config, **{k: v for k, v in updates.items() if k in fields})


__all__ = [
    "CHAT_CRITERIA",
    "FED_CRITERIA",
    "GPTSCORE_SUMMEVAL_INSTRUCTIONS",
    "LABELS",
    "PRESETS",
    "SHEN_CRITERIA",
    "SUMMEVAL",
    "TOPICAL_CHAT",
    "chat_criteria",
    "config_for",
    "criteria_for",
    "fed_dimension",
    "task_kind",
]
