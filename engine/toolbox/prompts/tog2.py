"""ToG-2's reasoning prompt (Ma et al., ICLR 2025), as the paper prints it, and its renderer.

ToG-2 prunes relations and entities with ToG's prompts (`prompts.tog`); what it adds is this one
prompt, which shows the knowledge triplets of each chain with the passages found for its entities
and asks for `{Yes}`/`{No}` and the answer (or the clues so far) in braces.
"""
from __future__ import annotations

from collections.abc import Sequence

# -- ToG-2 (Ma et al., ICLR 2025) ------------------------------------------------------------------------
# ToG-2, Appendix E, Table 18 ("Reasoning Prompt (QA)"), as printed; the PDF text's blank lines between
# lines are not part of the prompt.
TOG2_REASONING_PROMPT = """Given a question, some clues, the associated retrieved knowledge triplets and related contexts, you are asked to evaluate if these resources, combined with your pre-existing knowledge, are sufficient to formulate an answer ({Yes} or {No}).
Your answer must begin with {Yes} or {No}.
If {Yes}, please note that the analyzed answer entity must be enclosed in curly brackets {xxxxxx}
If {No}, it means the resources are useless or provide clues that are helpful but insufficient to answer the question conclusively. Based on the given knowledge, please summarize any insights (if any) so far that may help answer the question, which must also be enclosed in curly brackets {xxxxxx}.
Here are some examples:
Example 1:
Question:
The Sentinelese language is the language of people of one of which islands in the Bay of Bengal ?
(Clues):
None
(Knowledge triplets):
Sentinelese language, Indigenous to, Sentinelese people
(Triplet's related context):
The Sentinelese, also known as the Sentinel and the North Sentinel Islanders, are an indigenous people who inhabit North Sentinel Island in the Bay of Bengal in the northeastern Indian Ocean.
(Knowledge triplets):
Bay of Bengal, area, Andaman and Nicobar Islands
(Triplet's related context):
Andaman and Nicobar Islands are an archipelagic island chain in the eastern Indian Ocean across the Bay of Bengal, they are part of India. They are within the union territory of the Andaman and Nicobar Islands
Answer:
{Yes} The analyzed answer entity is {Andaman and Nicobar Islands}.
Example 2:
Question:
Who is the coach of the team owned by the most famous English former professional footballer?
(Clues):
The most famous English former professional footballer is David Beckham.
(Knowledge triplets):
David Beckham, co-owned, Inter Miami CF
(Triplet's related context):
Inter Miami CF, founded in 2018, is a professional soccer club based in Miami, Florida. It competes in Major League Soccer (MLS) as part of the Eastern Conference. David Beckham made a 3 years contract with his major coach.
Answer:
{No} The given knowledge provides helpful information that the footballer is David Beckham and David Beckham's ownership of Inter Miami CF, but they do not explicitly mention who the coach is. The useful information for now is {the team owned by the famous English former professional footballer David Beckham is Inter Miami CF}
Now, please carefully consider the following case:
"""


Group = tuple[Sequence[tuple[str, str, str]], Sequence[str]]  # (knowledge triplets, their related contexts)


def tog2_reasoning_prompt(question: str, clues: str, groups: Sequence[Group]) -> str:
    """ToG-2's reasoning prompt: question, clues, then (triplets, related context) blocks, `Answer:`."""
    lines = [TOG2_REASONING_PROMPT + "Question:", question, "(Clues):", clues or "None"]
    for triples, contexts in groups or [((), ())]:
        lines += ["(Knowledge triplets):", "\n".join(", ".join(t) for t in triples) or "None",
                  "(Triplet's related context):", "\n".join(contexts) or "None"]
    lines.append("Answer:")
    return "\n".join(lines)
