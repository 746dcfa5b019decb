"""Checklist generation (paper Figure 16), shared by the construction pipeline's checklist stage
(:mod:`mtvbench.construct.stages.checklists`) and ``mtvbench checklists``.

- :mod:`.generator`: one call asks for ``n`` yes/no questions about a question/answer pair; the
  reply is rule-checked and re-asked (bounded).
- :mod:`.fill`: the missing checklist entries of a released-layout dataset, written resumably
  into a copy of the dataset or in place.
"""
