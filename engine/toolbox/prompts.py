"""Prompt templates of ToG and PoG, verbatim, with renderers and forgiving reply parsers.

Sources (see docs/llm.md):
- ToG (IDEA-FinAI/ToG, `ToG/prompt_list.py`): relation pruning, entity scoring, sufficiency
  evaluation, answer, direct generation, and their Wikidata (`*_WIKI`) variants. The renderers
  reproduce ToG's string building in `ToG/freebase_func.py` / `ToG/wiki_func.py` byte for byte,
  quirks included (`exact=False` repairs them; see docs/llm.md).
- PoG (Paths-over-Graph, Tan et al.): its own repository is not in the stored index, so the
  question-analysis and path-selection prompts come from the same authors' HydraRAG repository
  (SteveTANTAN/EMNLP2025_Submit-Hydra, `Hydra_run/cot_prompt_list.py`), whose text matches the
  templates in appendix E of the PoG paper.

Parsers never crash on odd replies: they return what is usable or raise a one-line `LLMError`.
"""
from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ...cache.costs import charge
from ...sparql.errors import LLMError

# The system message ToG sends with every prompt (`run_llm` in ToG/utils.py).
TOG_SYSTEM = "You are an AI assistant that helps people find information."

# ---------------------------------------------------------------------------------------------
# ToG prompts, verbatim from IDEA-FinAI/ToG ToG/prompt_list.py (commit d31dd39)
# ---------------------------------------------------------------------------------------------
EXTRACT_RELATION_PROMPT = """Please retrieve %s relations (separated by semicolon) that contribute to the question and rate their contribution on a scale from 0 to 1 (the sum of the scores of %s relations is 1).
Q: Name the president of the country whose main spoken language was Brahui in 1980?
Topic Entity: Brahui Language
Relations: language.human_language.main_country; language.human_language.language_family; language.human_language.iso_639_3_code; base.rosetta.languoid.parent; language.human_language.writing_system; base.rosetta.languoid.languoid_class; language.human_language.countries_spoken_in; kg.object_profile.prominent_type; base.rosetta.languoid.document; base.ontologies.ontology_instance.equivalent_instances; base.rosetta.languoid.local_name; language.human_language.region
A: 1. {language.human_language.main_country (Score: 0.4))}: This relation is highly relevant as it directly relates to the country whose president is being asked for, and the main country where Brahui language is spoken in 1980.
2. {language.human_language.countries_spoken_in (Score: 0.3)}: This relation is also relevant as it provides information on the countries where Brahui language is spoken, which could help narrow down the search for the president.
3. {base.rosetta.languoid.parent (Score: 0.2)}: This relation is less relevant but still provides some context on the language family to which Brahui belongs, which could be useful in understanding the linguistic and cultural background of the country in question.

Q: """

SCORE_ENTITY_CANDIDATES_PROMPT = """Please score the entities' contribution to the question on a scale from 0 to 1 (the sum of the scores of all entities is 1).
Q: The movie featured Miley Cyrus and was produced by Tobin Armbrust?
Relation: film.producer.film
Entites: The Resident; So Undercover; Let Me In; Begin Again; The Quiet Ones; A Walk Among the Tombstones
Score: 0.0, 1.0, 0.0, 0.0, 0.0, 0.0
The movie that matches the given criteria is "So Undercover" with Miley Cyrus and produced by Tobin Armbrust. Therefore, the score for "So Undercover" would be 1, and the scores for all other entities would be 0.

Q: {}
Relation: {}
Entites: """

ANSWER_PROMPT = """Given a question and the associated retrieved knowledge graph triplets (entity, relation, entity), you are asked to answer the question with these triplets and your knowledge.
Q: Find the person who said \"Taste cannot be controlled by law\", what did this person die from?
Knowledge Triplets: Taste cannot be controlled by law., media_common.quotation.author, Thomas Jefferson
A: Based on the given knowledge triplets, it's not sufficient to answer the entire question. The triplets only provide information about the person who said "Taste cannot be controlled by law," which is Thomas Jefferson. To answer the second part of the question, it's necessary to have additional knowledge about where Thomas Jefferson's dead.

Q: The artist nominated for The Long Winter lived where?
Knowledge Triplets: The Long Winter, book.written_work.author, Laura Ingalls Wilder
Laura Ingalls Wilder, people.person.places_lived, Unknown-Entity
Unknown-Entity, people.place_lived.location, De Smet
A: Based on the given knowledge triplets, the author of The Long Winter, Laura Ingalls Wilder, lived in De Smet. Therefore, the answer to the question is {De Smet}.

Q: Who is the coach of the team owned by Steve Bisciotti?
Knowledge Triplets: Steve Bisciotti, sports.professional_sports_team.owner_s, Baltimore Ravens
Steve Bisciotti, sports.sports_team_owner.teams_owned, Baltimore Ravens
Steve Bisciotti, organization.organization_founder.organizations_founded, Allegis Group
A: Based on the given knowledge triplets, the coach of the team owned by Steve Bisciotti is not explicitly mentioned. However, it can be inferred that the team owned by Steve Bisciotti is the Baltimore Ravens, a professional sports team. Therefore, additional knowledge about the current coach of the Baltimore Ravens can be used to answer the question.

Q: Rift Valley Province is located in a nation that uses which form of currency?
Knowledge Triplets: Rift Valley Province, location.administrative_division.country, Kenya
Rift Valley Province, location.location.geolocation, UnName_Entity
Rift Valley Province, location.mailing_address.state_province_region, UnName_Entity
Kenya, location.country.currency_used, Kenyan shilling
A: Based on the given knowledge triplets, Rift Valley Province is located in Kenya, which uses the Kenyan shilling as its currency. Therefore, the answer to the question is {Kenyan shilling}.

Q: The country with the National Anthem of Bolivia borders which nations?
Knowledge Triplets: National Anthem of Bolivia, government.national_anthem_of_a_country.anthem, UnName_Entity
National Anthem of Bolivia, music.composition.composer, Leopoldo Benedetto Vincenti
National Anthem of Bolivia, music.composition.lyricist, José Ignacio de Sanjinés
UnName_Entity, government.national_anthem_of_a_country.country, Bolivia
Bolivia, location.country.national_anthem, UnName_Entity
A: Based on the given knowledge triplets, we can infer that the National Anthem of Bolivia is the anthem of Bolivia. Therefore, the country with the National Anthem of Bolivia is Bolivia itself. However, the given knowledge triplets do not provide information about which nations border Bolivia. To answer this question, we need additional knowledge about the geography of Bolivia and its neighboring countries.

Q: {}
"""

PROMPT_EVALUATE = """Given a question and the associated retrieved knowledge graph triplets (entity, relation, entity), you are asked to answer whether it's sufficient for you to answer the question with these triplets and your knowledge (Yes or No).
Q: Find the person who said \"Taste cannot be controlled by law\", what did this person die from?
Knowledge Triplets: Taste cannot be controlled by law., media_common.quotation.author, Thomas Jefferson
A: {No}. Based on the given knowledge triplets, it's not sufficient to answer the entire question. The triplets only provide information about the person who said "Taste cannot be controlled by law," which is Thomas Jefferson. To answer the second part of the question, it's necessary to have additional knowledge about where Thomas Jefferson's dead.

Q: The artist nominated for The Long Winter lived where?
Knowledge Triplets: The Long Winter, book.written_work.author, Laura Ingalls Wilder
Laura Ingalls Wilder, people.person.places_lived, Unknown-Entity
Unknown-Entity, people.place_lived.location, De Smet
A: {Yes}. Based on the given knowledge triplets, the author of The Long Winter, Laura Ingalls Wilder, lived in De Smet. Therefore, the answer to the question is {De Smet}.

Q: Who is the coach of the team owned by Steve Bisciotti?
Knowledge Triplets: Steve Bisciotti, sports.professional_sports_team.owner_s, Baltimore Ravens
Steve Bisciotti, sports.sports_team_owner.teams_owned, Baltimore Ravens
Steve Bisciotti, organization.organization_founder.organizations_founded, Allegis Group
A: {No}. Based on the given knowledge triplets, the coach of the team owned by Steve Bisciotti is not explicitly mentioned. However, it can be inferred that the team owned by Steve Bisciotti is the Baltimore Ravens, a professional sports team. Therefore, additional knowledge about the current coach of the Baltimore Ravens can be used to answer the question.

Q: Rift Valley Province is located in a nation that uses which form of currency?
Knowledge Triplets: Rift Valley Province, location.administrative_division.country, Kenya
Rift Valley Province, location.location.geolocation, UnName_Entity
Rift Valley Province, location.mailing_address.state_province_region, UnName_Entity
Kenya, location.country.currency_used, Kenyan shilling
A: {Yes}. Based on the given knowledge triplets, Rift Valley Province is located in Kenya, which uses the Kenyan shilling as its currency. Therefore, the answer to the question is {Kenyan shilling}.

Q: The country with the National Anthem of Bolivia borders which nations?
Knowledge Triplets: National Anthem of Bolivia, government.national_anthem_of_a_country.anthem, UnName_Entity
National Anthem of Bolivia, music.composition.composer, Leopoldo Benedetto Vincenti
National Anthem of Bolivia, music.composition.lyricist, José Ignacio de Sanjinés
UnName_Entity, government.national_anthem_of_a_country.country, Bolivia
Bolivia, location.country.national_anthem, UnName_Entity
A: {No}. Based on the given knowledge triplets, we can infer that the National Anthem of Bolivia is the anthem of Bolivia. Therefore, the country with the National Anthem of Bolivia is Bolivia itself. However, the given knowledge triplets do not provide information about which nations border Bolivia. To answer this question, we need additional knowledge about the geography of Bolivia and its neighboring countries.

"""

GENERATE_DIRECTLY = """Q: What state is home to the university that is represented in sports by George Washington Colonials men's basketball?
A: First, the education institution has a sports team named George Washington Colonials men's basketball in is George Washington University , Second, George Washington University is in Washington D.C. The answer is {Washington, D.C.}.

Q: Who lists Pramatha Chaudhuri as an influence and wrote Jana Gana Mana?
A: First, Bharoto Bhagyo Bidhata wrote Jana Gana Mana. Second, Bharoto Bhagyo Bidhata lists Pramatha Chaudhuri as an influence. The answer is {Bharoto Bhagyo Bidhata}.

Q: Who was the artist nominated for an award for You Drive Me Crazy?
A: First, the artist nominated for an award for You Drive Me Crazy is Britney Spears. The answer is {Jason Allen Alexander}.

Q: What person born in Siegen influenced the work of Vincent Van Gogh?
A: First, Peter Paul Rubens, Claude Monet and etc. influenced the work of Vincent Van Gogh. Second, Peter Paul Rubens born in Siegen. The answer is {Peter Paul Rubens}.

Q: What is the country close to Russia where Mikheil Saakashvii holds a government position?
A: First, China, Norway, Finland, Estonia and Georgia is close to Russia. Second, Mikheil Saakashvii holds a government position at Georgia. The answer is {Georgia}.

Q: What drug did the actor who portrayed the character Urethane Wheels Guy overdosed on?
A: First, Mitchell Lee Hedberg portrayed character Urethane Wheels Guy. Second, Mitchell Lee Hedberg overdose Heroin. The answer is {Heroin}."""

SCORE_ENTITY_CANDIDATES_PROMPT_WIKI = """Please score the entities' contribution to the question on a scale from 0 to 1 (the sum of the scores of all entities is 1).
Q: Staten Island Summer, starred what actress who was a cast member of "Saturday Night Live"?
Relation: cast member
Entites: Ashley Greene; Bobby Moynihan; Camille Saviola; Cecily Strong; Colin Jost; Fred Armisen; Gina Gershon; Graham Phillips; Hassan Johnson; Jackson Nicoll; Jim Gaffigan; John DeLuca; Kate Walsh; Mary Birdsong
Score: 0.0, 0.0, 0.0, 0.4, 0.0, 0.2, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.4, 0.0
To score the entities\' contribution to the question, we need to determine which entities are relevant to the question and have a higher likelihood of being the correct answer.
In this case, we are looking for an actress who was a cast member of "Saturday Night Live" and starred in the movie "Staten Island Summer." Based on this information, we can eliminate entities that are not actresses or were not cast members of "Saturday Night Live."
The relevant entities that meet these criteria are:\n- Ashley Greene\n- Cecily Strong\n- Fred Armisen\n- Gina Gershon\n- Kate Walsh\n\nTo distribute the scores, we can assign a higher score to entities that are more likely to be the correct answer. In this case, the most likely answer would be an actress who was a cast member of "Saturday Night Live" around the time the movie was released.
Based on this reasoning, the scores could be assigned as follows:\n- Ashley Greene: 0\n- Cecily Strong: 0.4\n- Fred Armisen: 0.2\n- Gina Gershon: 0\n- Kate Walsh: 0.4

Q: {}
Relation: {}
Entites: """

PROMPT_EVALUATE_WIKI = """Given a question and the associated retrieved knowledge graph triplets (entity, relation, entity), you are asked to answer whether it's sufficient for you to answer the question with these triplets and your knowledge (Yes or No).
Q: Viscount Yamaji Motoharu was a general in the early Imperial Japanese Army which belonged to which Empire?
Knowledge Triplets: Imperial Japanese Army, allegiance, Emperor of Japan
Yamaji Motoharu, allegiance, Emperor of Japan
Yamaji Motoharu, military rank, general
A: {Yes}. Based on the given knowledge triplets and my knowledge, Viscount Yamaji Motoharu, who was a general in the early Imperial Japanese Army, belonged to the Empire of Japan. Therefore, the answer to the question is {Empire of Japan}.

Q: Who is the coach of the team owned by Steve Bisciotti?
Knowledge Triplets: psilocybin, described by source, Opium Law,
psilocybin, found in taxon, Gymnopilus purpuratus,
psilocybin, found in taxon, Gymnopilus spectabilis, 
Opium Law, part of, norcodeine (stereochemistry defined), 
Gymnopilus purpuratus, edibility, psychoactive mushroom,
Gymnopilus spectabilis, parent taxon, Gymnopilus
A: {No}. Based on the given knowledge triplets and my knowledge, the specific psychedelic compound found in the Psilocybin genus mushroom that is converted to psilocin by the body is not explicitly mentioned. Therefore, additional knowledge about the specific compounds and their conversion to psilocin is required to answer the question.

Q: Which tennis player is younger, John Newcombe or Květa Peschke?
Knowledge Triplets: Květa Peschke, date of birth, +1975-07-09T00:00:00Z, 
John Newcombe, date of birth, +1944-05-23T00:00:00Z,
John Newcombe, country of citizenship, Australia
A: {Yes}. Based on the given knowledge triplets and my knowledge, John Newcombe was born on May 23, 1944, and Květa Peschke was born on July 9, 1975. Therefore, {Květa Peschke} is younger than John Newcombe.

Q: At what stadium did Mychal George Thompson play home games with the San Antonio Spurs?
Knowledge Triplets: San Antonio Spurs, home venue, AT&T Center
San Antonio Spurs, home venue, Alamodome
San Antonio Spurs, home venue, Fort Worth Convention Center
AT&T Center, occupant, San Antonio Spurs
Fort Worth Convention Center, located in the administrative territorial entity, Texas
Fort Worth Convention Center, occupant, San Antonio Spurs
A: {Yes}. Based on the given knowledge triplets and my knowledge, Mychal George Thompson played home games with the San Antonio Spurs at the AT&T Center. Therefore, the answer to the question is {AT&T Center}.

"""

EXTRACT_RELATION_PROMPT_WIKI = """Please retrieve %s relations (separated by semicolon) that contribute to the question and rate their contribution on a scale from 0 to 1 (the sum of the scores of %s relations is 1).
Q: Mesih Pasha's uncle became emperor in what year?
Topic Entity: Mesih Pasha
Relations:
1. wiki.relation.child
2. wiki.relation.country_of_citizenship
3. wiki.relation.date_of_birth
4. wiki.relation.family
5. wiki.relation.father
6. wiki.relation.languages_spoken, written_or_signed
7. wiki.relation.military_rank
8. wiki.relation.occupation
9. wiki.relation.place_of_death
10. wiki.relation.position_held
11. wiki.relation.religion_or_worldview
12. wiki.relation.sex_or_gender
13. wiki.relation.sibling
14. wiki.relation.significant_event
A: 1. {wiki.relation.family (Score: 0.5)}: This relation is highly relevant as it can provide information about the family background of Mesih Pasha, including his uncle who became emperor.
2. {wiki.relation.father (Score: 0.4)}: Uncle is father's brother, so father might provide some information as well.
3. {wiki.relation.position held (Score: 0.1)}: This relation is moderately relevant as it can provide information about any significant positions held by Mesih Pasha or his uncle that could be related to becoming an emperor.

Q: Van Andel Institute was founded in part by what American businessman, who was best known as co-founder of the Amway Corporation?
Topic Entity: Van Andel Institute
Relations:
1. wiki.relation.affiliation
2. wiki.relation.country
3. wiki.relation.donations
4. wiki.relation.educated_at
5. wiki.relation.employer
6. wiki.relation.headquarters_location
7. wiki.relation.legal_form
8. wiki.relation.located_in_the_administrative_territorial_entity
9. wiki.relation.total_revenue
A: 1. {wiki.relation.affiliation (Score: 0.4)}: This relation is relevant because it can provide information about the individuals or organizations associated with the Van Andel Institute, including the American businessman who co-founded the Amway Corporation.
2. {wiki.relation.donations (Score: 0.3)}: This relation is relevant because it can provide information about the financial contributions made to the Van Andel Institute, which may include donations from the American businessman in question.
3. {wiki.relation.educated_at (Score: 0.3)}: This relation is relevant because it can provide information about the educational background of the American businessman, which may have influenced his involvement in founding the Van Andel Institute.

Q: """

ANSWER_PROMPT_WIKI = """Given a question and the associated retrieved knowledge graph triplets (entity, relation, entity), you are asked to answer the question with these triplets and your own knowledge.
Q: Viscount Yamaji Motoharu was a general in the early Imperial Japanese Army which belonged to which Empire?
Knowledge Triplets: Imperial Japanese Army, allegiance, Emperor of Japan
Yamaji Motoharu, allegiance, Emperor of Japan
Yamaji Motoharu, military rank, general
A: Based on the given knowledge triplets and my knowledge, Viscount Yamaji Motoharu, who was a general in the early Imperial Japanese Army, belonged to the Empire of Japan. Therefore, the answer to the question is {Empire of Japan}.

Q: Who is the coach of the team owned by Steve Bisciotti?
Knowledge Triplets: psilocybin, described by source, Opium Law,
psilocybin, found in taxon, Gymnopilus purpuratus,
psilocybin, found in taxon, Gymnopilus spectabilis, 
Opium Law, part of, norcodeine (stereochemistry defined), 
Gymnopilus purpuratus, edibility, psychoactive mushroom,
Gymnopilus spectabilis, parent taxon, Gymnopilus
A: Based on the given knowledge triplets and my knowledge, the specific psychedelic compound found in the Psilocybin genus mushroom that is converted to psilocin by the body is not explicitly mentioned. Therefore, additional knowledge about the specific compounds and their conversion to psilocin is required to answer the question.

Q: Which tennis player is younger, John Newcombe or Květa Peschke?
Knowledge Triplets: Květa Peschke, date of birth, +1975-07-09T00:00:00Z, 
John Newcombe, date of birth, +1944-05-23T00:00:00Z,
John Newcombe, country of citizenship, Australia
A: Based on the given knowledge triplets and my knowledge, John Newcombe was born on May 23, 1944, and Květa Peschke was born on July 9, 1975. Therefore, {Květa Peschke} is younger than John Newcombe.

Q: At what stadium did Mychal George Thompson play home games with the San Antonio Spurs?
Knowledge Triplets: San Antonio Spurs, home venue, AT&T Center
San Antonio Spurs, home venue, Alamodome
San Antonio Spurs, home venue, Fort Worth Convention Center
AT&T Center, occupant, San Antonio Spurs
Fort Worth Convention Center, located in the administrative territorial entity, Texas
Fort Worth Convention Center, occupant, San Antonio Spurs
A: Based on the given knowledge triplets and my knowledge, Mychal George Thompson played home games with the San Antonio Spurs at the AT&T Center. Therefore, the answer to the question is {AT&T Center}.

Q: {}
"""

# ---------------------------------------------------------------------------------------------
# PoG prompts, verbatim from SteveTANTAN/EMNLP2025_Submit-Hydra Hydra_run/cot_prompt_list.py
# (commit f9d9a70; PoG's authors' code base): question analysis (`split_question_prompt`),
# precise path selection (`main_path_select_prompt`), node-expansion edge selection
# (`explored_path_select_prompt`).
# ---------------------------------------------------------------------------------------------
POG_QUESTION_ANALYSIS_PROMPT = """
You will receive a multi-hop question, which is composed of several interconnected queries, along with a list of topic entities that serve as the main keywords for the question. Please split the multi-hop question into parts for clarity and depth.

please give me the Thinking CoT which contains chain relations of "ALL" the topic entities and predicted answer type, and serval split questions.

Each entity in the topic list is already included in the knowledge graph. Your task is to consider how to obtain the answer by using all the topic entities and split the multi-hop question into multiple simpler questions using one Topic Entity once. Each split question should explore the relationship between one of the topic entities and the others entities or the answer. Your goal is to determine how to derive the final answer by systematically addressing each split question.

note: the number of split questions should be equal to the number of topic entities. since each split question is work for one topic entity.




For example:
Q: 
Question: What country bordering France contains an airport that serves Nijmegen?
also writen as: what countries share borders with france and is the location contains and airport that server Nijmegen?
Main Topic Entities: {m.05g2b: Nijmegen, m.0f8l9c: France}
A:
Thinking Cot:  "Nijmegen" - service by - airport - owned by - answer(country) - border with - "France"
split_question1: What country contains an airport that serves "Nijmegen"?
split_question2: What country bordering "France"?

please provide answer(A) section only in the same format as the example above.

The question is:

"""

POG_PATH_SELECT_PROMPT = """
Given a question and the associated retrieved entities lists, 
Please score and give me the top three lists that can be highly to be the answer to the question.

please give me a summary final answer exactly same to the format below in each question beginning

Answer: top_list: {path 1, path 2, path3}
Explanation: The top three lists are path 1, path 2, and path 3....

"""

POG_EDGE_SELECT_PROMPT = """
Given a main question, a LLM-generated thinking Cot that consider all the entities, a few split questions that you can use stepply and finally obtain the final answer, and the associated retrieved knowledge graph path, {set of entities (with id start with "m.")} -> {set of relationships} -> {set of entities(with id start with "m.")}, 

Please score and give me the top three lists from the candidate set can be highly to be the answer of the question.
please answer in the same format, such as, top_list:{Candidate Edge 1, Candidate Edge 3, Candidate Edge4}.

For example:
Q: question
exsiting path: {set of entities (with id start with "m.")} -> {set of relationships} -> {set of entities(with id start with "m.")}
Candidate Edge 1:  {set of entities (with id start with "m.")} -> {set of relationships} -> {set of entities(with id start with "m.")}  
Candidate Edge 2:  {set of entities (with id start with "m.")} -> {set of relationships} -> {set of entities(with id start with "m.")}  
Candidate Edge 3:  {set of entities (with id start with "m.")} -> {set of relationships} -> {set of entities(with id start with "m.")}  
Candidate Edge 4:  {set of entities (with id start with "m.")} -> {set of relationships} -> {set of entities(with id start with "m.")}  
A: top_list:{Candidate Edge 1, Candidate Edge 3, Candidate Edge4}

the question is:
"""

Triple = Sequence[str]  # (head, relation, tail) as ToG prints them


# ---------------------------------------------------------------------------------------------
# Renderers
# ---------------------------------------------------------------------------------------------
def tog_relation_prompt(question: str, entity_name: str, relations: Sequence[str], width: int = 3, *,
                        wiki: bool = False, exact: bool = True) -> str:
    """ToG's `construct_relation_prune_prompt` (relations in the order given; ToG sorts them first)."""
    if wiki:
        listing = "\n".join(f"{i}. {item}" for i, item in enumerate(relations, start=1))
        tail = "\nA:" if not exact else "A:"
        return EXTRACT_RELATION_PROMPT_WIKI % (width, width) + question + "\nTopic Entity: " + entity_name + "\nRelations:\n" + listing + tail
    return EXTRACT_RELATION_PROMPT % (width, width) + question + "\nTopic Entity: " + entity_name + "\nRelations: " + "; ".join(relations) + "\nA: "


def tog_entity_prompt(question: str, relation: str, entity_names: Sequence[str], *, wiki: bool = False) -> str:
    """ToG's `construct_entity_score_prompt`."""
    template = SCORE_ENTITY_CANDIDATES_PROMPT_WIKI if wiki else SCORE_ENTITY_CANDIDATES_PROMPT
    return template.format(question, relation) + "; ".join(entity_names) + "\nScore: "


def tog_triplets(triples: Iterable[Triple]) -> str:
    """Knowledge triplets one per line, `head, relation, tail`, as ToG joins its reasoning chains."""
    return "\n".join(", ".join(str(x) for x in triple) for triple in triples)


def tog_evaluate_prompt(question: str, triples: Iterable[Triple], *, wiki: bool = False, exact: bool = True) -> str:
    """ToG's `reasoning` prompt (sufficiency, `{Yes}`/`{No}`).

    exact=True reproduces ToG: no `Q: ` before the question and `A: ` glued to the last triplet.
    """
    template = PROMPT_EVALUATE_WIKI if wiki else PROMPT_EVALUATE
    if exact:
        return template + question + "\nKnowledge Triplets: " + tog_triplets(triples) + "A: "
    return template + "Q: " + question + "\nKnowledge Triplets: " + tog_triplets(triples) + "\nA: "


def tog_answer_prompt(question: str, triples: Iterable[Triple], *, wiki: bool = False, exact: bool = True) -> str:
    """ToG's `generate_answer` prompt.

    exact=True reproduces ToG, which appends the question after the template's unfilled `Q: {}`
    line and glues `A: ` to the last triplet; exact=False fills `Q: {question}` and breaks the line.
    """
    template = ANSWER_PROMPT_WIKI if wiki else ANSWER_PROMPT
    if exact:
        return template + question + "\n" + "\nKnowledge Triplets: " + tog_triplets(triples) + "A: "
    head = template[: -len("Q: {}\n")]
    return head + "Q: " + question + "\nKnowledge Triplets: " + tog_triplets(triples) + "\nA: "


def tog_generate_directly_prompt(question: str) -> str:
    """ToG's `generate_without_explored_paths` prompt (answer from the LLM's own knowledge)."""
    return GENERATE_DIRECTLY + "\n\nQ: " + question + "\nA:"


def pog_question_analysis_prompt(question: str, topic_entities: Mapping[str, str]) -> str:
    """PoG's question analysis (split questions + thinking indicator), as `run_split_question_prompt` builds it."""
    return (POG_QUESTION_ANALYSIS_PROMPT + "\nQ:\n Question: " + question + "\n"
            + "Main Topic Entities: \n" + str(dict(topic_entities)) + "\n" + "A:\n")


def pog_path_select_prompt(question: str, analysis: str, paths: Sequence[str]) -> str:
    """PoG's precise path selection over numbered candidate paths (`beam_path_select`)."""
    listing = "".join(f"Path {i}: {path}\n" for i, path in enumerate(paths, start=1))
    return POG_PATH_SELECT_PROMPT + "\nQ: " + question + f"\n {analysis}" + "\nThe entity list is: \n" + listing


def pog_edge_select_prompt(question: str, analysis: str, existing: Sequence[str], edges: Sequence[str]) -> str:
    """PoG's node-expansion selection of candidate edges given the existing paths (`beam_path_expand_select`)."""
    have = "".join(f"existing_path {j}: {path}\n" for j, path in enumerate(existing, start=1))
    listing = "".join(f"Candidate Edge {i}: {edge}\n" for i, edge in enumerate(edges, start=1))
    return POG_EDGE_SELECT_PROMPT + "\nQ: " + question + f"\n {analysis}" + have + "\n\nThe Candidate Edge list is: \n" + listing


# ---------------------------------------------------------------------------------------------
# Parsers
# ---------------------------------------------------------------------------------------------
_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)"
# `{rel (Score: 0.4)}` with ToG's own `))}` typo, any case, `Score=`/`score -` variants
_TOG_RELATION = re.compile(r"\{\s*([^{}()]+?)\s*\(\s*score\s*[:=\-]?\s*(" + _NUMBER + r")\s*\)+\s*\}", re.I)
# a line naming one relation with an optional score: `1. rel (Score: 0.5)`, `- rel: 0.5`, `rel - 0.5`
# a run of numbers on one line: `0.0, 1.0, 0.0` or `[0.2; 0.8]`
_NUMBER_RUN = re.compile(r"[ \t]*\[?[ \t]*((?:" + _NUMBER + r"(?:[ \t]*[,;][ \t]*|[ \t]+))*" + _NUMBER + r")")
_LINE = re.compile(r"^\s*(?:\d+[.)]|[-*•])?\s*[*`'\"]*\{?\s*([^\s{}()\[\]:;,`'\"*]+)\s*\}?[*`'\"]*\s*(?:\(\s*(?:score\s*[:=]?\s*)?("
                   + _NUMBER + r")\s*\)|[:=\-]\s*(?:score\s*[:=]?\s*)?(" + _NUMBER + r")(?![\w.]))?", re.I)


def _excerpt(text: str, width: int = 80) -> str:
    flat = " ".join(text.split())
    return flat[:width] + ("…" if len(flat) > width else "")


def _norm(name: str) -> str:
    return re.sub(r"[\s_]+", "_", name.strip().strip("'\"`*[]{}.,;:").lower())


class _Matcher:
    """Maps names the LLM wrote back onto the offered candidates: exact, case-insensitive, fuzzy."""

    def __init__(self, candidates: Sequence[str], cutoff: float = 0.85):
        self.candidates = list(candidates)
        self.exact = {c: c for c in self.candidates}
        self.folded: dict[str, str] = {}
        for c in self.candidates:
            self.folded.setdefault(_norm(c), c)
        self.cutoff = cutoff

    def __call__(self, name: str) -> str | None:
        name = name.strip()
        if name in self.exact:
            return name
        key = _norm(name)
        if key.startswith("wiki.relation.") and key[14:] in self.folded:  # ToG's Wikidata example spells labels so
            return self.folded[key[14:]]
        if key in self.folded:
            return self.folded[key]
        close = difflib.get_close_matches(key, list(self.folded), n=1, cutoff=self.cutoff)
        if close:
            return self.folded[close[0]]
        tails = [c for k, c in self.folded.items() if k.endswith("." + key)]  # `nationality` → `people.person.nationality`
        if len(tails) == 1:
            return tails[0]
        # the first leg of one compound (CVT) relation, as a real model writes it: `a` → `a|b`
        heads = [c for k, c in self.folded.items() if k.startswith(key + "|")]
        return heads[0] if len(heads) == 1 else None


def _json_values(text: str) -> list:
    """Every JSON object or array embedded in the text (outermost first), ignoring what does not parse."""
    decoder = json.JSONDecoder()
    found, i = [], 0
    while i < len(text):
        if text[i] in "[{":
            try:
                value, end = decoder.raw_decode(text, i)
            except ValueError:
                i += 1
                continue
            found.append(value)
            i = end
        else:
            i += 1
    return found


_JSON_FIELD = re.compile(r'"([^"\\]{1,60})"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?|true|false|null|\[[^\[\]]*\])(?=\s*[,}\]])')


def json_object(text: str) -> dict | None:
    """The first JSON object of a reply (inside a ```json fence or not), else None.

    A reply cut at the token cap inside its object (`{"reasoning": "...", "answer": "Gua`) keeps the
    complete `"field": value` pairs written before the cut. None means nothing readable.
    """
    for value in _json_values(text):
        if isinstance(value, dict):
            return value
    start = text.find("{")
    if start < 0:
        return None
    fields = {}
    for key, raw in _JSON_FIELD.findall(text[start:]):
        try:
            fields.setdefault(key, json.loads(raw))
        except ValueError:
            continue
    return fields or None


def _pairs_from_json(value) -> list[tuple[str, float | None]]:
    if isinstance(value, dict):
        if "relation" in value or "name" in value:
            name = value.get("relation", value.get("name"))
            score = value.get("score")
            return [(str(name), float(score) if isinstance(score, (int, float)) else None)]
        pairs = []
        for key, score in value.items():
            if isinstance(score, (int, float)) and not isinstance(score, bool):
                pairs.append((str(key), float(score)))
            elif isinstance(score, (list, dict)):
                pairs.extend(_pairs_from_json(score))
        return pairs
    if isinstance(value, list):
        pairs = []
        for item in value:
            if isinstance(item, str):
                pairs.append((item, None))
            elif isinstance(item, (list, tuple)) and len(item) == 2 and isinstance(item[0], str):
                pairs.append((item[0], float(item[1]) if isinstance(item[1], (int, float)) else None))
            elif isinstance(item, dict):
                pairs.extend(_pairs_from_json(item))
        return pairs
    return []


def parse_relation_scores(reply: str, candidates: Sequence[str]) -> list[tuple[str, float]]:
    """(relation, score) pairs from a relation-pruning reply, restricted to the offered candidates.

    Reads ToG's `{rel (Score: x)}` format first, then JSON (lists, `{rel: score}`), then one relation
    per line, then bare mentions of candidates. Names match exactly, case-insensitively or fuzzily;
    missing scores become equal shares. Raises `LLMError` when nothing usable is found.
    """
    match = _Matcher(candidates)
    found: list[tuple[str, float | None]] = [(m.group(1), float(m.group(2))) for m in _TOG_RELATION.finditer(reply)]
    if not found:
        for value in _json_values(reply):
            found.extend(_pairs_from_json(value))
    if not any(match(name) for name, _ in found):
        found = []
        for line in reply.splitlines():
            m = _LINE.match(line)
            if m and match(m.group(1)):
                score = m.group(2) or m.group(3)
                found.append((m.group(1), float(score) if score else None))
    if not any(match(name) for name, _ in found):
        lowered = reply.lower()
        hits = [(lowered.find(c.lower()), c) for c in candidates if c and c.lower() in lowered]
        found = [(c, None) for _, c in sorted(hits)]
    pairs: dict[str, float | None] = {}
    for name, score in found:
        if ";" in name:  # ToG skips `{a; b (Score: …)}`
            continue
        relation = match(name)
        if relation is not None and relation not in pairs:
            pairs[relation] = score
    if not pairs:
        raise LLMError(f"the LLM named none of the {len(candidates)} offered relations in its reply "
                       f"({_excerpt(reply)!r}): check the model follows ToG's '{{relation (Score: x)}}' format, or prune with sbert/bm25")
    if all(score is None for score in pairs.values()):
        share = 1.0 / len(pairs)
        return [(r, share) for r in pairs]
    return [(r, max(0.0, s) if s is not None else 0.0) for r, s in pairs.items()]


def _normalise(scores: list[float]) -> list[float]:
    total = sum(scores)
    if total <= 0:
        return [1.0 / len(scores)] * len(scores) if scores else []
    return [s / total for s in scores]


def parse_entity_scores(reply: str, candidates: Sequence[str]) -> list[float]:
    """Scores for `candidates` (in order) from an entity-scoring reply, normalised to sum 1.

    Reads the first run of numbers (the line after ToG's `Score: `), else every decimal in the
    reply as ToG's `clean_scores` does, else `name: score` lines. A count that matches none of
    these gives every candidate an equal share, as ToG does ("All entities are created equal").
    """
    n = len(candidates)
    if n == 0:
        return []
    after_label = re.split(r"scores?\s*:", reply, maxsplit=1, flags=re.I)
    for text in ([after_label[1]] if len(after_label) == 2 else []) + [reply]:
        run = _NUMBER_RUN.match(text)
        if run:
            numbers = [float(x) for x in re.findall(_NUMBER, run.group(1))]
            if len(numbers) == n:
                return _normalise([max(0.0, x) for x in numbers])
    decimals = [float(x) for x in re.findall(r"\d+\.\d+", reply)]  # ToG's rule
    if len(decimals) == n:
        return _normalise(decimals)
    by_name: dict[str, float] = {}
    match = _Matcher(candidates)
    for line in reply.splitlines():
        m = re.match(r"^\s*(?:[-*•]|\d+[.)])?\s*\"?(.+?)\"?\s*[:=\-]\s*(" + _NUMBER + r")\s*$", line)
        if m and (name := match(m.group(1))) is not None:
            by_name.setdefault(name, max(0.0, float(m.group(2))))
    if by_name:
        return _normalise([by_name.get(c, 0.0) for c in candidates])
    prose = _prose_entity_scores(reply, match)  # "the score for Guatemala would be 1, … all other entities would be 0"
    if prose is not None:
        return _normalise([prose[0].get(c, prose[1]) for c in candidates])
    charge("parse_fallbacks")  # ToG: "All entities are created equal"
    return [1.0 / n] * n


_PROSE_VERB = r"\s*(?:would\s+be|will\s+be|should\s+be|is|are|of|=|:)\s*"
_PROSE_SCORE = re.compile(r"score\s+(?:for|of)\s+(?:the\s+entity\s+)?[\"'“]?(.+?)[\"'”]?" + _PROSE_VERB + "(" + _NUMBER + r")(?![\w.])", re.I)
_PROSE_OTHERS = re.compile(r"(?:all\s+)?(?:the\s+)?other\s+entit\w*" + _PROSE_VERB + "(" + _NUMBER + r")(?![\w.])", re.I)


def _prose_entity_scores(reply: str, match: _Matcher) -> tuple[dict[str, float], float] | None:
    """Scores a reply states in prose, and the score it gives "all other entities" (0 if unsaid)."""
    named: dict[str, float] = {}
    for m in _PROSE_SCORE.finditer(reply):
        if (name := match(m.group(1))) is not None:
            named.setdefault(name, max(0.0, float(m.group(2))))
    if not named:
        return None
    others = _PROSE_OTHERS.search(reply)
    return named, max(0.0, float(others.group(1))) if others else 0.0


def braced(reply: str) -> list[str]:
    """Every `{...}` span in the reply, stripped, in order."""
    return [m.strip() for m in re.findall(r"\{([^{}]*)\}", reply)]


def parse_sufficient(reply: str) -> bool:
    """True when the reply says `{Yes}` (ToG's evaluation); a leading bare `Yes` also counts."""
    for span in braced(reply):
        word = re.sub(r"[^a-z]", "", span.lower())
        if word in {"yes", "no"}:
            return word == "yes"
    m = re.match(r"\W*(?:response\W*|answer\W*|a\W*:)?\W*(yes|no)\b", reply.strip(), re.I)
    return bool(m and m.group(1).lower() == "yes")


def extract_answer(reply: str) -> str:
    """The answer in braces (ToG/PoG `{answer}`); empty when the reply has none.

    Skips `{Yes}`/`{No}` verdicts, so `{Yes}. ... the answer is {De Smet}` gives `De Smet`.
    """
    for span in braced(reply):
        if re.sub(r"[^a-z]", "", span.lower()) not in {"yes", "no"} and span:
            return span
    return ""


def parse_path_selection(reply: str, count: int) -> list[int]:
    """0-based indices of the paths PoG's selection reply chose (`top_list: {path 1, path 3}`).

    Falls back to `Path N`/`Candidate Edge N` mentions anywhere; out-of-range numbers are dropped.
    Raises `LLMError` when the reply selects nothing.
    """
    numbers: list[int] = []
    m = re.search(r"ist\s*:?\s*[\{\[]([^{}\[\]]+)[\}\]]", reply, re.I)
    if m:
        numbers = [int(x) for x in re.findall(r"\d+", m.group(1))]
    if not any(1 <= x <= count for x in numbers):
        numbers = [int(x) for x in re.findall(r"(?:path|edge)\s*:?\s*(\d+)", reply, re.I)]
    chosen = list(dict.fromkeys(x - 1 for x in numbers if 1 <= x <= count))
    if not chosen:
        raise LLMError(f"the LLM selected none of the {count} candidate paths ({_excerpt(reply)!r}): "
                       "check the model answers 'top_list: {path 1, path 2, path 3}', or use an LLM-free strategy ('fuzzy')")
    return chosen


@dataclass
class QuestionAnalysis:
    """PoG's question analysis: the thinking indicator, split questions and the predicted depth."""

    indicator: str = ""
    split_questions: list[str] = field(default_factory=list)
    depth: int = 1
    raw: str = ""


def parse_question_analysis(reply: str) -> QuestionAnalysis:
    """Thinking CoT, split questions and D_predict from a PoG question-analysis reply.

    D_predict is the largest number of hops between `answer(...)` and an end of the indicator chain
    (`"Nijmegen" - service by - airport - owned by - answer(country) - border with - "France"` → 2).
    """
    indicator = ""
    m = re.search(r"thinking\s*cot\s*:\s*(.+)", reply, re.I)
    if m:
        indicator = m.group(1).strip()
    splits = [q.strip() for q in re.findall(r"split_question\s*\d*\s*:\s*(.+)", reply, re.I)]
    depth = 1
    if indicator:
        parts = [p.strip() for p in indicator.split(" - ")]
        answer = next((i for i, p in enumerate(parts) if p.lower().startswith("answer")), len(parts) - 1)
        depth = max(1, (max(answer, len(parts) - 1 - answer) + 1) // 2)
    return QuestionAnalysis(indicator, splits, depth, reply)


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


# -- PoG (Tan et al.) ------------------------------------------------------------------------------------
# PoG appendix E templates (the paper prints their instructions; the few-shot examples are not published).
POG_SUPPLEMENT_PROMPT = (
    "Using the main question, a possibly uncertain chain of thought generated by a language model, some related "
    "split questions, paths from the \"Related_paths\" section, and main topic entities: please first provide three "
    "predicted results, and second offer three possible chains of thought that could lead to these results, using "
    "the provided knowledge paths and your own knowledge. If any answers are unclear, suggest alternative answers to "
    "fill in the gaps in the chains of thought, following the same format as the provided examples.\n"
    "Answer in this format:\nPredict 1: {entity}\nThinking Cot 1: \"topic\" - relation - answer(entity) - ...\n")


POG_SUMMARY_PROMPT = (
    "Given a main question, an uncertain LLM-generated thinking Cot that considers all the entities, a few split "
    "questions that you can use one by one and finally obtain the final answer, the associated accuracy retrieved "
    "knowledge paths from the Related paths section, and main topic entities. Your task is to summarize the provided "
    "knowledge triple in the Related paths section and generate a chain of thoughts by the knowledge triple related "
    "to the main topic entities of the question, which will used for generating the answer for the main question and "
    "split question further. You have to make sure you summarize correctly by using the provided knowledge triple, "
    "you can only use the entity with id from the given path and you can not skip in steps.\n")


POG_EVALUATE_PROMPT = (
    "Given a main question, an uncertain LLM-generated thinking Cot that considers all the entities, a few split "
    "questions that you can use and finally obtain the final answer, and the associated retrieved knowledge graph "
    "path, {set of entities (with id start with \"m.\")} -> {set of relationships} -> {set of entities(with id start "
    "with \"m.\")}. Your task is to determine if this knowledge graph path is sufficient to answer the given split "
    "question first then the main question. If it's sufficient, you need to respond {Yes} and provide the answer to "
    "the main question. If the answer is obtained from the given knowledge path, it should be the entity name from "
    "the path. Otherwise, you need to response {No}, then explain the reason.\n")


POG_GENERATE_PROMPT = (
    "Given a main question, an uncertain LLM-generated thinking Cot that considers all the entities, a few split "
    "questions that you can use one by one and finally obtain the final answer, and the associated retrieved "
    "knowledge graph path, {set of entities (with id start with \"m.\")} -> {set of relationships} -> {set of "
    "entities(with id start with \"m.\")}, Your task is to generate the answer based on the given knowledge graph "
    "path and your own knowledge. Give the answer in braces, e.g. {answer}.\n")


# -- HydraRAG (Tan et al.) -------------------------------------------------------------------------------
HYDRA_SOURCE_SELECT_PROMPT = (
    "You are a source selection agent. Your task is to decide the most appropriate knowledge source(s) to answer a "
    "user's question. You will be provided with up to three sources: Local Knowledge Graph (KG) Wiki Documents (Wiki) "
    "Web Search (Web). Follow these steps carefully:\nI. Analyze the question thoroughly.\nII. Prioritize KG if "
    "available: If KG alone is sufficient, select KG. If KG is incomplete, check if Wiki can fill the missing "
    "information. If so, combine KG with Wiki. If neither KG nor Wiki suffices, include Web search.\nIII. If KG is "
    "unavailable: Choose between Wiki and Web based on recency and the likely completeness of the Wiki documents.\n"
    "Clearly state your reasoning, and then indicate your decision using these actions:\naction1 for KG\naction2 for "
    "Wiki\naction3 for Web\nNoted, combinations allowed (e.g., [action1 + action2]).\n")


HYDRA_REFINE_PROMPT = (
    "Given a main question, an uncertain LLM-generated thinking Cot that considers all the entities, a few split "
    "questions that you can use and finally obtain the final answer, the associated accuracy retrieved knowledge "
    "paths from the Related_path section, and the main topic entities Please predict the additional evidence that "
    "needs to be found to answer the current question, then provide a suitable query for retrieving this potential "
    "evidence. and give the possible Chains of Thought that can lead to the predicted result in the same format "
    "below, by the given knowledge path and your own knowledge.\nAnswer in this format:\nNew question: ...\n"
    "Thinking Cot: \"topic\" - relation - answer(type) - ...\n")


# -- INSES (paper 002): appendix B, tables 4–6, and F, table 12; verbatim --------------------------------
INSES_EXTRACT_ENTITIES_PROMPT = """Your task is to extract several entities from the given query, so they can be used to search a knowledge graph for clues relevant to answering the query.

Return only the entities you extract, separated by commas, with no other text.

Query: {query}"""


INSES_NAVIGATION_PROMPT = """Your task is to provide support for complex queries and multi-hop reasoning in the knowledge graph. Based on the following query, the visited nodes and the selected triplets, as well as the current nodes and their adjacent triplets, select the triplet numbers (separated by commas) from the adjacent triplets of the current nodes that help answer the query.

Selection criteria: Select the triplets that are most relevant to the query and most likely to help answer it.

Then determine:

1. Based on the visited nodes, the selected triplets, and the triplets you just selected, is this information sufficient to answer the query?

2. If so, answer "sufficient";

3. If not, answer "insufficient";

Your response must be in JSON format with two fields:

"determination": "sufficient/insufficient",

"selection": "triplet numbers, e.g., 1, 2, 3"

Query: {query}

The visited nodes:

{visited}

The selected triplets and their corresponding source text:

{selected}

The current nodes:

{current}

The adjacent triplets and their corresponding source text:

{adjacent}"""


INSES_ANSWER_PROMPT = """You are a helpful assistant that provides accurate and concise answers based on the provided knowledge graph information.

Please answer the following query: {query}

The following information is extracted from a knowledge graph, which contains entities, relationships, and relevant text:

{context}

Your response must be in JSON format with two fields:

1. "reasoning": Your step-by-step reasoning process based on the knowledge graph information.

Explain how the entities and relationships help answer the query.

2. "answer": The final answer to the query, as concise as possible without unnecessary explanations.

Example response format:

{{

"reasoning": "Step 1: Identified entity X and its relationship to entity Y. Step 2: Found that entity Z is connected to both X and Y. Step 3: Based on these relationships, concluded that...",

"answer": "Concise answer here"

}}

JSON Response:"""


INSES_RAG_PROMPT = """You are a helpful assistant that provides accurate and concise answers based on the provided context.

Please answer the following query: {query}

Context information is below:

{context}

Your response must be in JSON format with three fields:

1. "reasoning": Your step-by-step reasoning process based on the context.

2. "answer": The final answer to the query, as concise as possible without unnecessary explanations.

3. "confidence": The confidence level of your answer, where 0 means no confidence and 1 means complete certainty. If you cannot derive a reasonable answer from the provided context, the returned confidence level should be low.

Example response format:

{{

"reasoning": "Step 1: ... Step 2: ... Step 3: ...",

"answer": "Concise answer here",

"confidence": 0.8

}}

JSON Response:"""


# Algorithm 2 line 1 ("use LLM to determine if q is related to multi-hop (≥ 3) search") has no prompt in
# the paper; this one is kgfed's, in the style of the tables above.
INSES_ROUTER_PROMPT = """Your task is to decide how a query should be answered. Simple factual queries (one or two reasoning steps) can be answered from retrieved text passages; multi-hop queries need three or more reasoning steps that chain different entities through a knowledge graph.

Your response must be in JSON format with two fields:

"multi_hop": true or false,

"reason": "one short sentence"

Query: {query}

JSON Response:"""


# -- PRoH (paper 004): the paper defers its prompts to its repository (not available here); these are kgfed's --
PROH_PLAN_PROMPT = """You are planning how to answer a question from a knowledge hypergraph. Decompose the question into a small number of sub-questions, each answerable by one or two facts, and state which sub-questions must be answered before which. Refer to the answer of sub-question k as #k.

Question: {question}
Topic entities: {topics}
Knowledge around the topic entities (nearest first):
{context}

Your response must be in JSON format:
{{"subquestions": [{{"id": 1, "question": "...", "depends_on": []}}, {{"id": 2, "question": "... #1 ...", "depends_on": [1]}}]}}

JSON Response:"""


PROH_REFINE_PROMPT = """You are refining a reasoning plan while answering a question. Some sub-questions are answered. Rewrite the unanswered sub-questions so that they use the answers found (replace #k by the answer), and add a sub-question only if it is needed.

Question: {question}
Answered sub-questions:
{answered}
Unanswered sub-questions:
{open}

Your response must be in JSON format:
{{"subquestions": [{{"id": 2, "question": "...", "depends_on": [1]}}]}}

JSON Response:"""


PROH_SCORE_PROMPT = """Rate how relevant each entity is for answering the question, from 0 (irrelevant) to 1 (essential).

Question: {question}
Entities:
{entities}

Your response must be in JSON format, one score per entity number: {{"1": 0.9, "2": 0.1}}

JSON Response:"""


PROH_DIRECTIONS_PROMPT = """Select up to {b} reasoning paths over a knowledge hypergraph that are most promising to extend towards the answer of the question.

Question: {question}
Candidate paths:
{paths}

Your response must be in JSON format: {{"selection": "path numbers, e.g., 1, 2"}}

JSON Response:"""


PROH_PATHS_PROMPT = """Decide which reasoning paths give enough knowledge to answer the question. Select none if no path is sufficient.

Question: {question}
Candidate paths:
{paths}

Your response must be in JSON format: {{"selection": "path numbers, e.g., 1, 2, or empty"}}

JSON Response:"""


PROH_STEP_PROMPT = """Answer the question using only the knowledge below. Give every answer the knowledge supports, most likely first, as entity names exactly as written.

Question: {question}
Knowledge:
{context}

Your response must be in JSON format: {{"answers": ["..."]}}

JSON Response:"""


PROH_FINAL_PROMPT = """Answer the question using the reasoning steps and the knowledge retrieved for them.

Question: {question}
Reasoning steps:
{steps}

Your response must be in JSON format with two fields: {{"reasoning": "...", "answer": "concise answer"}}

JSON Response:"""


PROH_JUDGE_PROMPT = """Several reasoning processes answered the same question. Choose the answer most consistent with its reasoning path.

Question: {question}
Candidates:
{candidates}

Your response must be in JSON format: {{"choice": candidate number}}

JSON Response:"""
