# ruff: noqa: E501  (pure data: conversation lines are kept whole so they read like the transcripts they are)
"""Invented BEAM chats and LoCoMo-Plus items behind the bundled samples (pure data).

Why a script: the BEAM sample folders (two 100K-style chats, one 10M-style chat in
``plan-<k>/chat.json`` parts) and the LoCoMo-Plus file must hold every quirk the loaders count,
with question evidence pointing at the right messages; pipeline.datasets.samples_beam renders
them from here. Everything here is invented for the project.

BEAM script syntax: ``=== <tier>/<chat> | <plan or ->`` starts a chat (or a 10M plan part of it),
``--- <batch number> | <time anchor>`` a batch, ``[tag] U: text`` a user message that opens a turn
(it gets the ``->-> <batch>,<turn>`` marker and an ``index``), ``U+: text`` a follow-up user
message in the same turn (no marker), ``A: text`` an assistant message. ``U!: text`` opens a
turn whose marker is malformed (``->-> <batch>,N/A``); ``U?: text`` one whose ``index`` disagrees
with its marker. Questions reference messages by ``{tag}``.
"""

from __future__ import annotations

from typing import Any

BEAM_SCRIPT = """
=== 100K/1 | -
--- 1 | March-04-2024
[stack] U: I'm starting a garden planner web app called Sprout with Flask and SQLite, and I want the MVP done by May 31, 2024. Where should I begin?
A: Start with the data model: gardens, beds, plants and sowing dates. Then build the Flask routes for creating a garden and adding beds, and keep SQLite until you have real users.
[beds] U: I've sketched the schema: a garden has many beds, each bed has a size in square feet and a sun level. Should sun level be an enum?
A: Yes, an enum of full sun, part shade and full shade keeps queries simple and matches how seed packets describe light needs.
U+: And the bed size, integer or float?
A: Use a float: raised beds are often 3.5 by 7 feet.
[codefmt] U: From now on, always show code with Python syntax highlighting when I ask for implementation details.
A: Understood, every code example will be in a fenced python block.
--- 2 | April-12-2024
[calendar] U: Next I built the sowing calendar: it reads the last frost date for the user's zip code and lists what to sow each week.
A: Nice. Cache the frost dates per zip code so the calendar does not call the weather service on every page load.
[frost] U: The frost lookup was slow, about 900 ms, so I added a cache table and now it's around 40 ms.
A: A 20x speed-up. Remember to expire the cache entries each spring.
[noframework] U!: I prefer small libraries over big frameworks, so I'd rather not pull in Celery for reminders.
A: Then APScheduler inside the app process is enough for daily reminder emails.
--- 3 | May-20-2024
[deploy] U: I deployed Sprout to a small VPS with gunicorn behind nginx on May 18, two weeks ahead of the deadline.
A: Congratulations. Add a health check endpoint and a nightly SQLite backup before you invite users.
[backup] U?: The nightly backup now copies the database to object storage at 2 am.
A: Good. Test a restore once so you know the backup is usable.
[neverauth] U: I have never written any login code for Sprout; gardens are public links for now.
A: Public links are fine for an MVP as long as the link ids are unguessable.
[authlater] U: I added a login page with Flask-Login last week so users can keep private gardens.
A: Then make sure passwords are hashed with a strong algorithm such as argon2.

=== 100K/2 | -
--- 1 | June-03-2024
[km] U: I'm training for the Lisbon half marathon on October 6, 2024, running 25 km a week so far.
A: A steady base. Add one long run per week and grow it by about a kilometre each week.
[shoes] U: My coach says I should replace my shoes every 600 km, and mine have 540 km on them.
A: Then order a new pair now so you can break them in before the old ones hit 600 km.
[kmup] U: Update: I'm up to 38 km a week now and my long run is 16 km.
A: That's solid progress for four weeks of training.
--- 2 | July-15-2024
[taper] U: I plan to taper for the last two weeks before the race.
A: A two-week taper suits a half marathon; cut the volume by about a third each week.
U: The race organisers moved the start to 8:30 am because of the heat.
A: Then rehearse your breakfast timing for an 8:30 start on your long runs.

=== 10M/1 | plan-0
--- 1 | January-08-2025
[kitchen] U: We're renovating the kitchen of our 1960s house and the budget is 32,000 euros.
A: Split it roughly into cabinets, worktops, appliances, plumbing and electrics, and keep ten percent in reserve.
[tiles] U: I chose terracotta floor tiles from a supplier in Porto.
A: Terracotta needs sealing; ask the supplier which sealant they recommend.
--- 2 | February-02-2025
[electric] U: The electrician found the old wiring has no earth, so the whole kitchen circuit has to be replaced.
A: That's common in houses of that age and worth doing before the walls are closed.
[budgetup] U: With the rewiring the kitchen budget is now 35,500 euros.
A: Still within a realistic range; take the extra from the reserve first.

=== 10M/1 | plan-1
--- 1 | March-10-2025
[bath] U: The kitchen is done, so now we're planning the bathroom upstairs.
A: Start with the waterproofing plan, since upstairs leaks are the costliest to repair.
[heat] U: We want underfloor heating in the bathroom, electric rather than water-based.
A: Electric mats are easier to retrofit; check the circuit can carry the load.
--- 2 | April-22-2025
[done] U: The bathroom was finished on April 20, three weeks late because the tiler was ill.
A: Three weeks is a small delay for a renovation; enjoy the warm floor.
U: I'm keeping a notebook of every supplier we used, with their phone numbers.
A: That will help with warranty claims later.
"""

# The two tables below are data, one entry per question or item with its fields packed: kept as
# written, not one field per line.
# fmt: off
# (chat, ability, fields): ``source`` uses {tag} for a message id; a string "{tag}" inside a
# list is written as an integer, "'{tag}'" as a string of digits (the evidence_id_string quirk).
BEAM_QUESTIONS: list[tuple[str, str, dict[str, Any]]] = [
    ("100K/1", "abstention", {
        "question": "Which payment provider did I pick for Sprout's premium plan?",
        "ideal_response": "Based on the provided chat, there is no information about a payment provider or a premium plan.",
        "difficulty": "medium", "abstention_type": "missing_detail",
        "why_unanswerable": "Payments are never discussed.",
        "rubric": ["Based on the provided chat, there is no information related to a payment provider"],
    }),
    ("100K/1", "contradiction_resolution", {
        "question": "Have I written any login code for Sprout?",
        "ideal_answer": "You said you had never written login code, but later you mentioned adding a login page with Flask-Login. Which is correct?",
        "difficulty": "clear", "contradiction_type": "never_statement_violation",
        "source": {"first_statement": ["{neverauth}"], "second_statement": ["{authlater}"]},
        "rubric": ["LLM response should state: there is contradictory information",
                   "LLM response should mention: you had never written login code",
                   "LLM response should mention: you added a login page with Flask-Login",
                   "LLM response should mention: which statement is correct?"],
    }),
    ("100K/1", "event_ordering", {
        "question": "In what order did I work on the schema, the sowing calendar and the deployment? Mention ONLY and ONLY three items.",
        "answer": "1) The garden and bed schema, 2) the sowing calendar, 3) the deployment to a VPS.",
        "difficulty": "medium", "ordering_type": "mention_sequence", "total_mentions": 3,
        "source": ["{beds}", "{calendar}", "{deploy}", "{calendar}"],
        "rubric": ["Garden and bed schema", "Sowing calendar", "Deployment to a VPS"],
    }),
    ("100K/1", "information_extraction", {
        "question": "What is the deadline for Sprout's MVP?",
        "answer": "May 31, 2024.", "difficulty": "easy",
        "source": ["{stack}"],
        "rubric": ["LLM response should state: May 31, 2024"],
    }),
    ("100K/1", "instruction_following", {
        "question": "How would I add a route that lists all beds of a garden?",
        "instruction_being_tested": "Always show code with Python syntax highlighting when I ask for implementation details.",
        "expected_compliance": "Response should include the code in a fenced python block.",
        "difficulty": "medium",
        "source": ["{codefmt}"],
        "rubric": ["LLM response should contain: code in a fenced python block"],
    }),
    ("100K/1", "knowledge_update", {
        "question": "How long does the frost date lookup take now?",
        "answer": "About 40 ms, after adding the cache table.", "difficulty": "easy",
        "source": {"original_info": ["{frost}"], "updated_info": ["{frost}"]},
        "rubric": ["LLM response should state: around 40 ms"],
    }),
    ("100K/1", "multi_session_reasoning", {
        "question": "How many days before the MVP deadline did I deploy Sprout?",
        "answer": "13 days: deployed on May 18, deadline May 31.", "difficulty": "easy",
        "source": ["{stack}", "{deploy}", 999],
        "rubric": ["LLM response should state: 13 days", "LLM response should mention: May 18 and May 31"],
    }),
    ("100K/1", "preference_following", {
        "question": "What should I use to send weekly digest emails?",
        "preference_being_tested": "I prefer small libraries over big frameworks.",
        "expected_compliance": "Response should suggest a lightweight scheduler, not a large task queue.",
        "difficulty": "",
        "source": ["{noframework}"],
        "rubric": ["LLM response should contain: a lightweight option such as APScheduler",
                   "LLM response should contain: no heavy framework such as Celery"],
    }),
    ("100K/1", "summarization", {
        "question": "Can you summarise how Sprout progressed from the first idea to the deployment?",
        "ideal_summary": "Sprout began as a Flask and SQLite garden planner with a schema of gardens and beds, gained a sowing calendar with cached frost dates, and was deployed to a VPS on May 18 with nightly backups and later a login page.",
        "difficulty": "medium",
        "source": ["{stack}", "{beds}", "{calendar}", "{frost}", "{deploy}", "{backup}"],
        "rubric": ["LLM response should mention: Flask and SQLite", "LLM response should mention: the sowing calendar",
                   "LLM response should mention: the cache for frost dates", "LLM response should mention: deployment on May 18"],
    }),
    ("100K/1", "temporal_reasoning", {
        "question": "How many weeks passed between building the sowing calendar and deploying Sprout?",
        "answer": "About five weeks: April 12 to May 18.", "difficulty": "easy",
        "source": {"first_event": ["{calendar}"], "second_event": ["{deploy}"]},
        "rubric": ["LLM response should state: about five weeks", "LLM response should state: from April 12 to May 18"],
    }),
    ("100K/2", "information_extraction", {
        "question": "How often should I replace my running shoes?",
        "answer": "Every 600 km.", "difficulty": "easy",
        "source": ["'{shoes}'"],
        "rubric": ["LLM response should state: every 600 km"],
    }),
    ("100K/2", "knowledge_update", {
        "question": "How many kilometres a week am I running?",
        "answer": "38 km a week.", "difficulty": "easy",
        "rubric": ["LLM response should state: 38 km"],
    }),
    ("100K/2", "temporal_reasoning", {
        "question": "When does my taper start if the race is on October 6?",
        "answer": "On September 22, two weeks before the race.",
        "source": {"first_event": ["{taper}"], "second_event": ["{km}"]},
        "rubric": ["LLM response should state: September 22"],
    }),
    ("100K/2", "abstention", {
        "question": "What finishing time did I run in Lisbon?",
        "ideal_response": "Based on the provided chat, there is no information about a finishing time.",
        "difficulty": "easy",
        "rubric": ["Based on the provided chat, there is no information related to the finishing time"],
    }),
    ("100K/2", "event_ordering", {
        "question": "List in order what I told you about my training volume and taper. Mention ONLY and ONLY three items.",
        "answer": "1) 25 km a week, 2) up to 38 km a week, 3) a two-week taper.",
        "difficulty": "easy",
        "source": ["{km}", "{kmup}", "{taper}"],
        "rubric": ["25 km a week", "38 km a week", "Two-week taper"],
    }),
    ("10M/1", "abstention", {
        "question": "What colour did we paint the living room?",
        "ideal_response": "Based on the provided chat, there is no information about the living room.",
        "difficulty": "easy",
        "rubric": ["Based on the provided chat, there is no information related to the living room"],
    }),
    ("10M/1", "contradiction_resolution", {
        "question": "Is the kitchen budget still 32,000 euros?",
        "ideal_answer": "You first gave 32,000 euros, then said it rose to 35,500 euros with the rewiring.",
        "difficulty": "clear",
        "source": {"first_statement": ["{kitchen}"], "second_statement": ["{budgetup}"]},
        "rubric": ["LLM response should mention: 32,000 euros", "LLM response should mention: 35,500 euros"],
    }),
    ("10M/1", "event_ordering", {
        "question": "In what order did we handle the kitchen wiring, the bathroom heating and the bathroom finish? Mention ONLY and ONLY three items.",
        "answer": "1) Kitchen rewiring, 2) underfloor heating plan, 3) bathroom finished.",
        "difficulty": "hard",
        "source": ["{electric}", "{heat}", "{done}"],
        "rubric": ["Kitchen rewiring", "Underfloor heating", "Bathroom finished"],
    }),
    ("10M/1", "information_extraction", {
        "question": "Where are the floor tiles from?",
        "answer": "A supplier in Porto.", "difficulty": "easy",
        "source": ["{tiles}"],
        "rubric": ["LLM response should state: Porto"],
    }),
    ("10M/1", "instruction_following", {
        "question": "Can you list the suppliers I should call about the bathroom warranty?",
        "expected_compliance": "Response should point to the supplier notebook.",
        "difficulty": "medium",
        "source": ["{done}"],
        "rubric": ["LLM response should contain: a reference to the supplier notebook"],
    }),
    ("10M/1", "knowledge_update", {
        "question": "What is the kitchen budget?",
        "answer": "35,500 euros.", "difficulty": "easy",
        "source": {"original_info": ["{kitchen}"], "updated_info": ["{budgetup}"]},
        "rubric": ["LLM response should state: 35,500 euros"],
    }),
    ("10M/1", "multi_session_reasoning", {
        "question": "Which two rooms did we renovate, and in which order?",
        "answer": "The kitchen, then the upstairs bathroom.", "difficulty": "easy",
        "source": ["{kitchen}", "{bath}"],
        "rubric": ["LLM response should state: the kitchen first", "LLM response should state: then the bathroom"],
    }),
    ("10M/1", "preference_following", {
        "question": "What heating would you suggest for the guest room?",
        "preference_being_tested": "Electric rather than water-based heating.",
        "difficulty": "medium",
        "source": ["{heat}"],
        "rubric": ["LLM response should contain: an electric option"],
    }),
    ("10M/1", "summarization", {
        "question": "Summarise the renovation so far.",
        "ideal_summary": "The kitchen was renovated on a budget raised from 32,000 to 35,500 euros after a full rewiring, with terracotta tiles from Porto; then the upstairs bathroom got electric underfloor heating and was finished on April 20, three weeks late.",
        "difficulty": "medium",
        "source": ["{kitchen}", "{tiles}", "{electric}", "{budgetup}", "{bath}", "{heat}", "{done}"],
        "rubric": ["LLM response should mention: the kitchen budget", "LLM response should mention: the rewiring",
                   "LLM response should mention: the bathroom underfloor heating"],
    }),
    ("10M/1", "temporal_reasoning", {
        "question": "How late was the bathroom finished?",
        "answer": "Three weeks late, on April 20.", "difficulty": "easy",
        "source": {"first_event": ["{done}"], "second_event": ["{bath}"]},
        "rubric": ["LLM response should state: three weeks"],
    }),
]

# 100K/2 also ships a chat_trunecated.json: its first batch only (the official pipeline reads it)
TRUNCATED_CHATS: dict[str, int] = {"100K/2": 1}

# LoCoMo-Plus items for the LoCoMo sample conversations (item i -> conversation i mod 2)
LOCOMO_PLUS_ITEMS: list[dict[str, str]] = [
    {"relation_type": "causal",
     "cue_dialogue": "A: Since I started running before my shifts, I sleep much better.\nB: Exercise before work really does help with rest.",
     "trigger_query": "A: I had to skip my morning runs this month and I keep waking up at 3 am.",
     "time_gap": "two months later"},
    {"relation_type": "state",
     "cue_dialogue": "A: My wrist has been sore since I started kneading dough every morning.\nB: Maybe try a stand mixer for the big batches.",
     "trigger_query": "A: I'm thinking of taking on a second bakery location.",
     "time_gap": "about six weeks later"},
    {"relation_type": "goal",
     "cue_dialogue": "A: I want to save enough to take my sister to Japan next spring.\nB: That's a lovely goal, start a separate savings account for it.",
     "trigger_query": "A: I just saw a great deal on a new car, should I go for it?",
     "time_gap": "several months later"},
    {"relation_type": "value",
     "cue_dialogue": "A: I always buy flour from local mills, even when it costs more.\n(They laugh.)\nB: Supporting local farmers matters to you.",
     "trigger_query": "A: A big distributor offered me flour at half the price.\nB: What are you going to do?",
     "time_gap": "a year after"},
]
# fmt: on
