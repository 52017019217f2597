"""Prompts exactly as the papers' authors released them, kept as data (one full template per dimension).

Slots: ``{source}`` (article / conversation history), ``{output}`` (the text scored), ``{first}`` / ``{second}``
(the two texts of a pairwise prompt, in presentation order). ``evalcore.methods.base.fill`` replaces only these
names, so the texts are safe to contain braces.

* 003 (Shen et al. 2023), Tables 1-3 and 8-16: the RTS, MCQ and H2H prompts for SummEval. The tables did not survive
  in our copy of the paper; the wording is transcribed from the authors' release (DAMO-NLP-SG/LLM_summeval,
  ``prompt_templates.py``). Quirks are kept verbatim: the missing space in "Your choice(enter" for fluency and
  coherence, "Score: Four" without a full stop in the fluency MCQ, and the comma after "irrelevance".
* 002 (Chen et al. 2023): the FED dialogue-level prompts (explicit score, implicit score, pairwise comparison) from
  the authors' release (MilkWhite/LLMs_for_Reference_Free_Text_Quality_Evaluation, ``FedDial/prompt_patterns``),
  with the ``{}`` slots named. Typos kept ("dose", "demonstrates").

The G-Eval prompts (000 Appendix A) are not here: they are ``Criteria`` objects in ``presets.py``, because G-Eval
builds its prompt from criteria and generated steps.
"""

from __future__ import annotations

SHEN_DIMENSIONS = ("relevance", "consistency", "fluency", "coherence")

# "Note that <dimension> measures ..." (003 App. B: Fabbri et al.'s first sentence + ChatGPT-suggested key phrases)
SHEN_DEFINITIONS: dict[str, str] = {
    "relevance": "the Summary's selection of important content from the Article, whether the Summary grasps the main message of the Article without being overwhelmed by unnecessary or less significant details.",
    "consistency": "the factual alignment between the Summary and the Article, whether the Summary is faithful to the Article without introducing contradictions or misleading representations.",
    "fluency": "the quality of individual sentences in the Summary, whether the Summary is well-written, grammatically correct, and readable on the sentence level.",
    "coherence": "the collective quality of the Summary, whether the Summary presents information that flows smoothly and avoids abrupt transitions or disjoint statements.",
}

_SHEN_ANCHORS = {
    "relevance": 'where one indicates "irrelevance", and five indicates "perfect relevance".',
    "consistency": 'where one indicates "inconsistency" and five indicates "perfect consistency".',
    "fluency": 'where one indicates "disfluency" and five indicates "perfect fluency".',
    "coherence": 'where one indicates "incoherence" and five indicates "perfect coherence".',
}

SHEN_MCQ_OPTIONS: dict[str, tuple[str, ...]] = {
    "relevance": (
        "The Summary is totally irrelevant to the Article. Score: One.",
        "The majority of the Summary is irrelevant to the Article. Score: Two.",
        "Some information in the Summary is relevant to the Article whereas some are not. Score: Three.",
        "The majority of the Summary is relevant to the Article. Score: Four.",
        "All information included in the Summary is relevant to the Article. Score: Five.",
    ),
    "consistency": (
        "The Summary is totally inconsistent with the Article. Score: One.",
        "The majority of the Summary is inconsistent with the Article. Score: Two.",
        "Some information in the Summary is consistent with the Article whereas some are not. Score: Three.",
        "The majority of the Summary is consistent with the Article. Score: Four.",
        "All information included in the Summary is consistent with the Article. Score: Five.",
    ),
    "fluency": (
        "The Summary is totally disfluent. Score: One.",
        "The majority of the Summary is disfluent. Score: Two.",
        "Some sentences in the Summary are fluent whereas some are not. Score: Three.",
        "The majority of the Summary is fluent. Score: Four",
        "All sentences in the Summary are fluent. Score: Five.",
    ),
    "coherence": (
        "The Summary is completely incoherent. Score: One.",
        "The Summary is mostly incoherent. Score: Two.",
        "The Summary is somewhat coherent. Score: Three.",
        "The Summary is mostly coherent. Score: Four.",
        "The Summary is completely coherent. Score: Five.",
    ),
}

_SHEN_ADJECTIVE = {"relevance": "relevant", "consistency": "consistent", "fluency": "fluent", "coherence": "coherent"}
_SHEN_CHOICE_SPACE = {"relevance": " ", "consistency": " ", "fluency": "", "coherence": ""}


def _shen_rts(dim: str) -> str:
    return (
        f"Score the following Summary given the corresponding Article with respect to {dim} from one to five, "
        f"{_SHEN_ANCHORS[dim]} Note that {dim} measures {SHEN_DEFINITIONS[dim]}\n\n"
        "Article: {source}\n\nSummary: {output}\n\n"
        "Provide your reason in one sentence, then give a final score:"
    )


def _shen_mcq(dim: str) -> str:
    options = "\n".join(f"{letter}: {text}" for letter, text in zip("ABCDE", SHEN_MCQ_OPTIONS[dim]))
    return (
        f"Choose an option from A to E in order to score the following Summary given the corresponding Article with "
        f"respect to {dim} from one to five, {_SHEN_ANCHORS[dim]} Note that {dim} measures {SHEN_DEFINITIONS[dim]}"
        "\n\nArticle: {source}\n\nSummary: {output}\n\n"
        f"{options}\n\nYour Answer (enter 1 letter from A to E):"
    )


def _shen_h2h(dim: str) -> str:
    adj = _SHEN_ADJECTIVE[dim]
    # the H2H prompts write "summary" in lower case inside the definition
    note = SHEN_DEFINITIONS[dim].replace("Summary", "summary")
    return (
        f"Choose a more {adj} summary from Summary #1 and Summary #2 with respect to the corresponding Article by "
        f"choosing an option from A, B, or C. Note that {dim} measures {note}\n\n"
        "Article: {source}\n\nSummary #1: {first}\n\nSummary #2: {second}\n\n"
        f"A: Summary #1 is more {adj}.\nB: Summary #2 is more {adj}.\n"
        f"C: Both Summary #1 and Summary #2 are equally {adj}.\n\n"
        f"Your choice{_SHEN_CHOICE_SPACE[dim]}(enter 1 letter from A to C):"
    )


SHEN_RTS: dict[str, str] = {d: _shen_rts(d) for d in SHEN_DIMENSIONS}
SHEN_MCQ: dict[str, str] = {d: _shen_mcq(d) for d in SHEN_DIMENSIONS}
SHEN_H2H: dict[str, str] = {d: _shen_h2h(d) for d in SHEN_DIMENSIONS}

# 002's FED dimensions, keyed by our names (file stems: coherent, consistent, diverse, flexible, informative,
# inquisitive, likeable, ...). 002 leaves error recovery out of its tables (missing annotations) but ships prompts.
FED_ALIASES: dict[str, str] = {
    "coherent": "coherence",
    "consistent": "consistency",
    "diverse": "diversity",
    "topic depth": "depth",
    "error recovery": "error_recovery",
    "flexible": "flexibility",
    "informative": "informativeness",
    "inquisitive": "inquisitiveness",
    "likeable": "likeability",
    "likability": "likeability",
    "overall performance": "overall",
}

CHEN_FED_EXPLICIT: dict[str, str] = {
    'coherence': "Evaluate the AI assistant's performance in terms of \"coherence\" by assigning a score on a continuous scale ranging from 0 (worst) to 100 (best) based on the following conversation between a human and the AI assistant. A score of 0 indicates \"incoherence\", while a score of 100 indicates \"perfect coherence\". Keep in mind that \"coherence\" refers to the AI's ability to maintain a smooth conversation flow and remain coherent throughout the conversation.\n\nConversation:\n{output}\n\nScore:",
    'consistency': "Evaluate the AI assistant's performance in terms of \"consistency\" by assigning a score on a continuous scale ranging from 0 (worst) to 100 (best) based on the following conversation between a human and the AI assistant. A score of 0 indicates \"inconsistency,\" while a score of 100 indicates \"perfect consistency.\" Keep in mind that \"consistency\" measures how well the AI's responses provide consistent information throughout the conversation.\n\nConversation:\n{output}\n\nScore:",
    'depth': "Based on the following conversation between a human and the AI assistant, please rate the AI's ability to discuss topics in depth on a continuous scale ranging from 0 (worst) to 100 (best).\n\nConversation:\n{output}\n\nScore:",
    'diversity': "Based on the following conversation between a human and the AI assistant, please rate the AI's ability to provide diverse responses on a continuous scale ranging from 0 (worst) to 100 (best).\n\nConversation:\n{output}\n\nScore:",
    'error_recovery': "Based on the following conversation between a human and the AI assistant, please rate the AI's ability to recover from errors that it makes on a continuous scale ranging from 0 (worst) to 100 (best).\n\nConversation:\n{output}\n\nScore:",
    'flexibility': "Based on the following conversation between a human and the AI assistant, please rate the AI's ability to adapt to humans and their interests flexibly on a continuous scale from 0 (worst) to 100 (best).\n\nConversation:\n{output}\n\nScore:",
    'informativeness': "Based on the following conversation between a human and the AI assistant, please rate the AI's ability to provide informative responses throughout the conversation on a continuous scale from 0 (worst) to 100 (best).\n\nConversation:\n{output}\n\nScore:",
    'inquisitiveness': "Based on the following conversation between a human and the AI assistant, please rate the AI's inquisitiveness on a continuous scale from 0 (worst) to 100 (best).\n\nConversation:\n{output}\n\nScore:",
    'likeability': "Based on the following conversation between a human and the AI assistant, please rate the AI's likeable personality on a continuous scale from 0 (worst) to 100 (best).\n\nConversation:\n{output}\n\nScore:",
    'overall': "Based on the following conversation between a human and the AI assistant, please rate the AI's overall performance on a continuous scale from 0 (worst) to 100 (best).\n\nConversation:\n{output}\n\nScore:",
    'understanding': "Based on the following conversation between a human and the AI assistant, please rate the AI's ability to understand the human on a continuous scale from 0 (worst) to 100 (best).\n\nConversation:\n{output}\n\nScore:",
}

CHEN_FED_IMPLICIT: dict[str, str] = {
    'coherence': "Consider the following conversation between a human and an AI assistant:\n\nConversation:\n{output}\n\nQuestion: Does the AI maintain a smooth conversation flow and remain coherent throughout the conversation?\n\nAnswer:",
    'consistency': "Consider the following conversation between a human and an AI assistant:\n\nConversation:\n{output}\n\nQuestion: Do the AI's responses provide consistent information throughout the conversation?\n\nAnswer:",
    'depth': "Consider the following conversation between a human and an AI assistant:\n\nConversation:\n{output}\n\nQuestion: Does the AI discuss topics in depth?\n\nAnswer:",
    'diversity': "Consider the following conversation between a human and an AI assistant:\n\nConversation:\n{output}\n\nQuestion: Is the AI capable of providing diverse responses throughout the conversation?\n\nAnswer:",
    'error_recovery': "Consider the following conversation between a human and an AI assistant:\n\nConversation:\n{output}\n\nQuestion: Is the AI able to recover from errors that it makes?\n\nAnswer:",
    'flexibility': "Consider the following conversation between a human and an AI assistant:\n\nConversation:\n{output}\n\nQuestion: Is the AI flexible and adaptable to human and their interests?\n\nAnswer:",
    'informativeness': "Consider the following conversation between a human and an AI assistant:\n\nConversation:\n{output}\n\nQuestion: Are the responses of AI informative throughout the conversation?\n\nAnswer:",
    'inquisitiveness': "Consider the following conversation between a human and an AI assistant:\n\nConversation:\n{output}\n\nQuestion: Is the AI inquisitive throughout the conversation?\n\nAnswer:",
    'likeability': "Consider the following conversation between a human and an AI assistant:\n\nConversation:\n{output}\n\nQuestion: Does the AI display a likeable personality?\n\nAnswer:",
    'overall': "Consider the following conversation between a human and an AI assistant:\n\nConversation:\n{output}\n\nQuestion: Does the AI demonstrates a good overall performance throughout the conversation?\n\nAnswer:",
    'understanding': "Consider the following conversation between a human and an AI assistant:\n\nConversation:\n{output}\n\nQuestion: Does the AI seem to understand the human?\n\nAnswer:",
}

CHEN_FED_PAIRWISE: dict[str, str] = {
    'coherence': "Consider the following two conversations between a human and an AI assistant:\n\nConversation-1:\n{first}\n\nConversation-2:\n{second}\n\nQuestion: In which conversation does the AI perform better in terms of \"coherence\"? Note that \"coherence\" refers to the AI's ability to maintain a smooth conversation flow and remain coherent throughout the conversation. Please answer with one of the following options.\n\nOptions:\n(A) Conversation-1\n(B) Conversation-2\n(C) The AI performs equally in terms of \"coherence\" in both conversations.\n\nAnswer: I will choose Option",
    'consistency': "Consider the following two conversations between a human and an AI assistant:\n\nConversation-1:\n{first}\n\nConversation-2:\n{second}\n\nQuestion: In which conversation does the AI perform better in terms of \"consistency\"? Note that \"consistency\" measures how well the AI's responses provide consistent information throughout the conversation. Please answer with one of the following options.\n\nOptions:\n(A) Conversation-1\n(B) Conversation-2\n(C) The AI performs equally in terms of \"consistency\" in both conversations.\n\nAnswer: I will choose Option",
    'depth': "Consider the following two conversations between a human and an AI assistant:\n\nConversation-1:\n{first}\n\nConversation-2:\n{second}\n\nQuestion: In which conversation does the AI discuss topics more deeply? Please answer with one of the following options.\n\nOptions:\n(A) Conversation-1\n(B) Conversation-2\n(C) The AI discusses topics equally deeply in both conversations.\n\nAnswer: I will choose Option",
    'diversity': "Consider the following two conversations between a human and an AI assistant:\n\nConversation-1:\n{first}\n\nConversation-2:\n{second}\n\nQuestion: In which conversation does the AI provide more diverse responses? Please answer with one of the following options.\n\nOptions:\n(A) Conversation-1\n(B) Conversation-2\n(C) The AI provides equally diverse responses in both conversations.\n\nAnswer: I will choose Option",
    'flexibility': "Consider the following two conversations between a human and an AI assistant:\n\nConversation-1:\n{first}\n\nConversation-2:\n{second}\n\nQuestion: In which conversation does the AI adapt to humans and their interests more flexibly? Please answer with one of the following options.\n\nOptions:\n(A) Conversation-1\n(B) Conversation-2\n(C) The AI is equally flexible to adapt to humans and their interests in both conversations.\n\nAnswer: I will choose Option",
    'informativeness': "Consider the following two conversations between a human and an AI assistant:\n\nConversation-1:\n{first}\n\nConversation-2:\n{second}\n\nQuestion: In which conversation does the AI provide more informative responses? Please answer with one of the following options.\n\nOptions:\n(A) Conversation-1\n(B) Conversation-2\n(C) The AI provides equally informative responses in both conversations.\n\nAnswer: I will choose Option",
    'inquisitiveness': "Consider the following two conversations between a human and an AI assistant:\n\nConversation-1:\n{first}\n\nConversation-2:\n{second}\n\nQuestion: In which conversation dose the AI behave more inquisitively? Please answer with one of the following options.\n\nOptions:\n(A) Conversation-1\n(B) Conversation-2\n(C) The AI behaves equally inquisitively in both conversations.\n\nAnswer: I will choose Option",
    'likeability': "Consider the following two conversations between a human and an AI assistant:\n\nConversation-1:\n{first}\n\nConversation-2:\n{second}\n\nQuestion: In which conversation dose the AI display a more likeable personality? Please answer with one of the following options.\n\nOptions:\n(A) Conversation-1\n(B) Conversation-2\n(C) The AI displays an equally likeable personality in both conversations.\n\nAnswer: I will choose Option",
    'overall': "Consider the following two conversations between a human and an AI assistant:\n\nConversation-1:\n{first}\n\nConversation-2:\n{second}\n\nQuestion: In which conversation dose the AI demonstrate a better overall performance? Please answer with one of the following options.\n\nOptions:\n(A) Conversation-1\n(B) Conversation-2\n(C) The AI demonstrates an overall equal performance in both conversations.\n\nAnswer: I will choose Option",
    'understanding': "Consider the following two conversations between a human and an AI assistant:\n\nConversation-1:\n{first}\n\nConversation-2:\n{second}\n\nQuestion: In which conversation dose the AI better understand the human? Please answer with one of the following options.\n\nOptions:\n(A) Conversation-1\n(B) Conversation-2\n(C) The AI is equally capable of understanding the human in both conversations.\n\nAnswer: I will choose Option",
}
