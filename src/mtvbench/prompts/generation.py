"""Prompts of the construction pipeline.

From the paper (Appendix A.2 and B.2), written out from its text:

- :data:`GENERATION_TEMPLATE` — Figure 8, the dialogue-generation template;
- :data:`TASK_INSTRUCTIONS` / :data:`TASK_CAPABILITY` — Figures 9 to 14, one per task,
  split into the "Task Instructions" and "Task Capability" parts that fill ``{Task
  Instructions}`` and ``{Task Capability}`` of Figure 8;
- :data:`CHECKLIST_TEMPLATE` — Figure 16, the checklist-generation prompt.

The paper does not print the prompts of the other construction steps (clip captions,
clip merging, object captions, task scoring); those below are this toolkit's own and are
marked as such. Additions to the paper's prompts (an explicit output format so replies
can be parsed) are kept in separate constants and appended, never mixed into the text.
"""

from __future__ import annotations

from mtvbench.data.schema import Task

# ----------------------------------------------------------------------------- Figure 8

GENERATION_TEMPLATE = (
    "You are a Video QA Orchestrator designed to rigorously evaluate a video-understanding model's "
    "capabilities with a primary focus on # {task_name} # within a dialogue:\n"
    "1. Core Task Instructions\n"
    "{task_instructions}\n"
    "2. Supporting Basic Capabilities\n"
    "- Basic capabilities testing may be introduced appropriately in the dialogue to provide richer "
    "conversational context, but their purpose is to better assist in testing {task_name} capabilities.\n"
    "- The questions (User) and answers (Assistant) of basic ability tests need to be detailed and rich.\n"
    "A. Scene Understanding\n"
    "1) Entity Recognition. 2) Event Comprehension. 3) Spatiotemporal Relations. 4) OCR/Text\n"
    "B. Scene Reasoning\n"
    "1) Causal Inference. 2) Intent Inference. 3) Counterfactuals. 4) Spatiotemporal Reasoning. "
    "5) Information Update. 6) Multi-Hop Logic\n"
    "3. Target Task Capability\n"
    "{task_capability}\n"
    "4. Output:\n"
    "Self-generated, cohesive multi-round dialogue (5-8 rounds) systematically probing capabilities of "
    "# {task_name} #. Use 'User:' and 'Assistant:' to indicate the speaker and 'Round k' as the round marker."
)

# ----------------------------------------------------------------------------- Figures 9-14

TASK_INSTRUCTIONS: dict[Task, str] = {
    Task.TOPIC_SHIFTING: (
        "- Mandatory Contextual Dependency: Every question (User) must initially focus on video content. "
        "Topic Shifting occurs when the user asks a question or makes a statement that shifts to any other "
        "topic (video-related OR unrelated). The model should recognize the new topic and respond "
        "appropriately.\n"
        "- Topic Shifting Recognition: If a question (User) shifts to a new topic (including non-video "
        "topics), the model must identify this shift and provide an appropriate answer.\n"
        "- Adapting to New Topics: When the model recognizes a topic shift, it must adjust its response to "
        "the new topic while ignoring obsolete context."
    ),
    Task.PROACTIVE_INTERACTION: (
        "- Context-Driven Engagement: Each Bot response must be grounded in the video's content and must "
        "explicitly or implicitly invite the User to stay engaged.\n"
        "- Proactive Engagement Strategy: When user responses are neutral or show low engagement, the Bot "
        "must actively reignite curiosity by asking video-specific, open-ended, thought-provoking questions.\n"
        "- Content-Guided Curiosity: Bot questions should be deeply tied to the video — e.g., character "
        "motivation, visual detail interpretation, or causal/temporal implications — to pull the user back "
        "into the conversation.\n"
        "- No rhetorical or vague questions like \"Don't you think?\" Instead, ask clear, content-specific, "
        "curiosity-prompting questions (e.g., \"Why do you think the character hesitated before opening the "
        "door?\")."
    ),
    Task.ANSWER_REFUSAL: (
        "- Mandatory Contextual Dependency: Every question MUST require information from the video to be "
        "answerable. **Answer Refusal** occurs when the question refers to video content that does not "
        "exist in the video. The model should identify that the content referenced in the question is "
        "missing and refuse to answer accordingly.\n"
        "- Answer Refusal Grounding: All answers must derive from video content or logical inferences from "
        "it. If the question refers to non-existent video content, the model must explicitly refuse to "
        "answer, stating that the content does not exist in the video.\n"
        "- Answer Refusal: Questions (User) should reference content or actions that are expected to be "
        "present in the video. If the content referred to is non-existent in the video, the model must "
        "refuse to provide an answer, explaining that the specific content does not exist in the video."
    ),
    Task.CONTENT_SUMMARY: (
        "- Mandatory Contextual Dependency: Every question MUST require information from previous rounds to "
        "be answerable. **Summary** questions must rely on the content of prior rounds for context. The "
        "summary should be concise and capture the core points of the entire conversation.\n"
        "- Answer Grounding: All answers must derive from video content or logical inferences from it. "
        "Answers must demonstrate an understanding of prior context to provide coherent responses.\n"
        "- Clarity in Summary: In the final round (Summary), the model should summarize the key elements "
        "discussed, such as topics, events, and entities involved in the conversation. The summary should "
        "highlight the main themes of the dialogue, but without introducing new information."
    ),
    Task.MEMORY_RECALL: (
        "- Mandatory Contextual Dependency: Every question MUST require information from previous rounds to "
        "be answerable. Memory Recall questions must refer to detailed descriptions from any prior round.\n"
        "- Answer Grounding: All answers must derive from video content or logical inferences from it. "
        "Answers must demonstrate an understanding of prior context to provide coherent responses.\n"
        "- Memory Recall: Questions should reference specific content or actions described in earlier rounds "
        "(e.g., \"As you mentioned earlier, the penguin hesitated… In which round of the conversation was "
        "this mentioned? …\") and then build upon that context to ask deeper, video-based questions.\n"
        "- No Explicit Round Numbers in Questions: **Memory Recall** questions should not explicitly mention "
        "the round number from which the content is referenced."
    ),
    Task.OBJECT_REFERENCE: (
        "- Mandatory Contextual Dependency: Every question MUST require information from previous rounds to "
        "be answerable. Object Reference questions must rely on the content of prior rounds for context.\n"
        "- Answer Grounding: All answers must derive from video content or logical inferences from it. "
        "Answers must demonstrate an understanding of prior context to provide coherent responses.\n"
        "- Clarity in Pronoun Reference: When using pronouns in **Object Reference** questions, ensure that "
        "the pronoun's reference is inferred from previous dialogue, not explicitly mentioned in the current "
        "round. The model must deduce from the context which entity or event the pronoun refers to."
    ),
}

TASK_CAPABILITY: dict[Task, str] = {
    Task.TOPIC_SHIFTING: (
        "- Topic Shifting capability MUST be tested at least twice through shifts to non-video topics**, "
        "with multiple back-and-forth transitions between video and non-video topics.\n"
        "- Pattern Example: Video topic → Non-video topic → Video topic → Non-video topic → etc.\n"
        "- Minimum Video Content: At least two rounds must focus exclusively on video content.\n"
        "- For Topic Shifting, the model must: 1. Identify shifts to any new topic (video-related or "
        "unrelated) 2. Maintain response stability during repeated topic transitions 3. Seamlessly resume "
        "video discussions after non-video tangents"
    ),
    Task.PROACTIVE_INTERACTION: (
        "- The Bot must trigger Proactive Interaction when the user's input is neutral or disinterested.\n"
        "- But should: highlight overlooked details, ask novel or deeper questions, and offer an unexpected "
        "angle of interpretation.\n"
        "- Questions should always tie to specific visual or narrative elements in the video and encourage "
        "user response."
    ),
    Task.ANSWER_REFUSAL: (
        "- Answer Refusal capability MUST be tested **at least once** in any round after the first. "
        "**Multiple or Continued** refusal tests are encouraged.\n"
        "- For **Answer Refusal**, the question (User) should ask about content in the video, but without "
        "specifying where the content should be found. If the content does not exist in the video, the "
        "model must refuse to answer and give some explanation.\n"
        "- Further Exploration: After refusing to answer based on non-existent content, the model should "
        "seek clarification or adjust the conversation to explore available content in the video."
    ),
    Task.CONTENT_SUMMARY: (
        "- Content Summary capability MUST be tested **once** in the final round. It should consolidate the "
        "entire conversation.\n"
        "- For the capability of Content Summary, the answer (Assistant) should provide a **concise** and "
        "**coherent summary** of the conversation, covering the key topics, entities, events, or actions "
        "mentioned in the previous rounds.\n"
        "- Concise and Comprehensive Summary: The final summary should: - Cover the **main events** of the "
        "conversation. - Identify **key entities** discussed. - Capture the **important actions** or "
        "**decisions** made throughout the conversation. - Be **concise** but should not leave out key "
        "elements discussed."
    ),
    Task.MEMORY_RECALL: (
        "- Memory Recall capability MUST be tested **at least once** in any round after the first. "
        "**Multiple or Continued** tests are encouraged.\n"
        "- For Memory Recall, the question (User) should include a detailed description from a previous "
        "round's answer (Assistant), but without specifying which round it came from. The model must first "
        "identify the round the content came from in its answer and then build upon that context to deepen "
        "the exploration.\n"
        "- Further Exploration: After recalling content from prior rounds, the model should pose further "
        "questions that deepen the understanding of the video, exploring new aspects of the content."
    ),
    Task.OBJECT_REFERENCE: (
        "- This capability of Object Reference MUST be tested **at least once** in any round after the "
        "first. **Multiple or Continued** tests are encouraged.\n"
        "- For capability of Object Reference, the answer (Assistant) should correctly identify the abstract "
        "Object Reference mentioned in Question (User) (e.g., \"the action mentioned,\" \"that dog you "
        "described,\" \"that man,\" etc., which refer to content from the dialogue history).\n"
        "- Indirect Reference: For **Object Reference** questions, **do not explicitly state** who or what "
        "is being referenced; it should be inferred from context.\n"
        "- Pronoun Clarification in Answers: When answering questions that involve pronouns, clarify the "
        "reference by placing the referent in parentheses (e.g., \"He (penguin dad) went to the sea.\")."
    ),
}

#: The ``Ability`` label the released data gives a round that tests the task itself.
#: The four "labelled" tasks must use exactly these (they decide which rounds are model turns).
TASK_ABILITY_LABEL: dict[Task, str] = {
    Task.OBJECT_REFERENCE: "Object Reference",
    Task.MEMORY_RECALL: "Memory Recall",
    Task.CONTENT_SUMMARY: "Summary",
    Task.ANSWER_REFUSAL: "Answer Refusal",
    Task.TOPIC_SHIFTING: "Topic Shifting",
    Task.PROACTIVE_INTERACTION: "Proactive Interaction",
}

BASIC_ABILITIES = (
    "Entity Recognition", "Event Comprehension", "Spatiotemporal Relations", "OCR/Text",
    "Causal Inference", "Intent Inference", "Counterfactuals", "Spatiotemporal Reasoning",
    "Information Update", "Multi-Hop Logic",
)

# ----------------------------------------------------------------------------- additions (ours)

#: Appended after Figure 8: the material the generator works from, and a parseable format.
GENERATION_CONTEXT = (
    "\n\n# Video material\n"
    "The attached frames come from {where}. Descriptions of that material:\n{material}\n"
    "{objects}"
    "When a question refers to the video, name the clip range it is about in the form "
    "\"in the video clip from HH:MM:SS to HH:MM:SS\" (the first question must do so{range_hint}).\n"
    "\n# Output format\n"
    "Write {min_rounds}-{max_rounds} rounds. Start each round with a line 'Round k' (k = 1, 2, ...), then a "
    "line 'Ability: <label>', then 'User: <question>' and 'Assistant: <answer>'. The label is "
    "'{ability}' for a round that tests {task_name}, otherwise one of: {basic}.{extra_format}\n"
    "Output only the dialogue."
)

#: Extra output rule for Topic Shifting so that the shifts can be checked mechanically.
TOPIC_FORMAT = (
    " For Topic Shifting, also add a line 'Topic: video' or 'Topic: non-video' after the Ability line of "
    "every round."
)

#: Object-centred instruction for cross-scene units (paper §3.2: cross-scene questions are object-centred).
CROSS_SCENE_OBJECTS = (
    "These clips come from different scenes of the same video and share the objects below. Design the "
    "dialogue around these objects: their continuity, changes and relations across the scenes.\n"
    "{object_lines}\n"
)

#: Sent on a re-ask, after the original prompt, with the problems of the previous reply.
REASK_SUFFIX = (
    "\n\n# Your previous answer was rejected\nIt broke these rules:\n{problems}\n"
    "Write the whole dialogue again, following every rule and the output format."
)

# ----------------------------------------------------------------------------- Figure 16

CHECKLIST_TEMPLATE = (
    "You are an expert QA evaluator. Your goal is to create a verification checklist to evaluate if a "
    "model's answer matches the Ground Truth.\n"
    "Input Data\n"
    "1. User Question: {question}\n"
    "2. Ground Truth Answer: {gt}\n"
    "Task Instructions (Atomic Decomposition & Fact Reversal)\n"
    "1. Decompose GT: Break down the Ground Truth into atomic facts (e.g., specific entities, actions, "
    "counts, colors, spatial relations).\n"
    "2. Select & Mix Strategy: Select {maxnum} critical facts. You must generate a mix of \"Yes\" and \"No\" "
    "verification questions:\n"
    "- Positive Questions (Expected Answer: Yes): verify facts exactly as they appear in the GT.\n"
    "- Negative/Reversal Questions (Expected Answer: No): Take a fact from the GT and intentionally reverse "
    "or alter it (e.g., change \"5 apples\" to \"3 apples\", or \"red car\" to \"blue car\").\n"
    "3. Formulate Questions:\n"
    "- Questions must be specific and check for the presence of the specific detail stated in the question.\n"
    "Constraints\n"
    "- Generate exactly {maxnum} questions (Q1-Q{maxnum}).\n"
    "- Try to include only one \"No\" question (based on reversed facts) and {n_yes} \"Yes\" questions.\n"
    "- Do NOT use the phrase \"ground truth\" in the questions.\n"
    "- Questions must be self-contained and concrete."
)

#: Our addition to Figure 16: the reply format the parser reads.
CHECKLIST_FORMAT = (
    "\n\nReturn only a JSON object of this form: {shape}"
)

# ----------------------------------------------------------------------------- other stages (ours)

CLIP_CAPTION_PROMPT = (
    "The frames are from one shot of a video, from {start} to {end}. Describe this shot in 2-4 "
    "sentences: the setting, the people, animals and objects (with colours and other visible "
    "attributes), what happens, and any visible text. Describe only what is shown."
)

MERGE_PROMPT = (
    "Two adjacent parts of one video are described below.\n"
    "Part A ({a_start} to {a_end}): {a_caption}\n"
    "Part B ({b_start} to {b_end}): {b_caption}\n\n"
    "Do A and B show the same scene (the same place and the same ongoing event, possibly from another "
    "camera angle)? Answer with one word first, 'Yes' or 'No', then a short reason."
)

OBJECT_CAPTION_PROMPT = (
    "The image is a crop around one object detected as '{label}' in a video frame. Describe this object "
    "in one sentence: what it is, its colours, and distinctive visible attributes. Describe only the object."
)

TASK_DEFINITIONS: dict[Task, str] = {
    Task.OBJECT_REFERENCE: "resolving pronouns and implicit references to entities of the video across turns",
    Task.MEMORY_RECALL: "retrieving and building on details from earlier turns of the conversation",
    Task.CONTENT_SUMMARY: "summarising the video content discussed over the whole conversation",
    Task.ANSWER_REFUSAL: "recognising and declining questions about content that is absent from the video",
    Task.TOPIC_SHIFTING: "following a user who switches between the video and unrelated topics",
    Task.PROACTIVE_INTERACTION: "keeping a disengaged user engaged with curiosity-raising questions about "
                                "the video",
}

SUITABILITY_PROMPT = (
    "You will design multi-turn dialogues about the video material below to test video-understanding "
    "models. Rate how well this material supports a dialogue for each task, from 1 (unsuitable) to 6 "
    "(ideal): rich enough content, clear entities and events, and a natural way to test the task.\n"
    "Material ({where}):\n{material}\n\n"
    "Tasks:\n{tasks}\n\n"
    "Return only a JSON object with one integer score per task key, e.g. {shape}"
)


def render_generation_prompt(task: Task) -> str:
    """Figure 8 filled with Figures 9-14 for ``task`` (the paper's text, without our additions)."""
    return GENERATION_TEMPLATE.format(
        task_name=task.label,
        task_instructions=TASK_INSTRUCTIONS[task],
        task_capability=TASK_CAPABILITY[task],
    )


_NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def number_word(n: int) -> str:
    """``4`` -> ``four`` (Figure 16 spells the count of "Yes" questions), digits above ten."""
    return _NUMBER_WORDS[n] if 0 <= n < len(_NUMBER_WORDS) else str(n)


def render_checklist_prompt(question: str, answer: str, n: int = 5) -> str:
    """Figure 16 plus the JSON format line (``{MAXNUM}`` = ``n``; "four" "Yes" questions spelled as the paper
    does for ``n`` = 5)."""
    shape = "{" + ", ".join(f'"Q{i}": "...", "A{i}": "Yes/No"' for i in range(1, n + 1)) + "}"
    return CHECKLIST_TEMPLATE.format(question=question, gt=answer, maxnum=n, n_yes=number_word(max(n - 1, 0))) + \
        CHECKLIST_FORMAT.format(shape=shape)
