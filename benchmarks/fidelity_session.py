"""The fidelity benchmark's session: a long data exploration with 100 identifiers planted once each.

Five kinds (file paths, variable names, column names, commands, numbers), 20 of each, spread
evenly over four placements: the user's message, the agent's answer, a small tool output, and
the middle of a long output that truncation hides. Each identifier sits next to a phrase
saying what it is ("the churn raw extract is at ..."), and has a probe question naming that
context but never the identifier ("which file was the churn raw extract?"). One probe in
three is asked in other words (synonyms for both halves of the phrase). These probes are the
tuning set: recall's constants and steps are chosen on them.

Each identifier also has a held-out probe, written apart from the tuning templates and from
recall's code: a third vocabulary for the subject, other verbs and nouns for the kinds, a third
of them naming no kind at all, commands asked by what they did, and identifiers the assistant
gave asked about as what it said. They are for judging, never for choosing. A second tuning probe
per identifier (``REWORDED``) is built the same way from a vocabulary of its own, sharing no
name with the held-out probes: the first tuning set asks two thirds of its questions in the
session's words, so a choice that helps questions asked wholly in other words is judged on this one.

Around them, the noise a real session makes: every step reads a new file into a new variable
and prints a frame, every tenth step prints a long log or data dictionary. Deterministic for
a seed; every planted value occurs exactly once in the whole script.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

KINDS = ("path", "variable", "column", "command", "number")
PLACEMENTS = ("user", "answer", "small-output", "output-middle")
ENTITIES = [
    ("churn", "customer attrition"),
    ("revenue", "sales income"),
    ("returns", "sent-back orders"),
    ("signup", "registration"),
    ("inventory", "stock level"),
    ("shipping", "delivery"),
    ("refund", "reimbursement"),
    ("loyalty", "rewards programme"),
    ("fraud", "suspicious payment"),
    ("pricing", "price list"),
    ("marketing spend", "advertising budget"),
    ("support ticket", "helpdesk case"),
    ("web session", "site visit"),
    ("supplier", "vendor"),
    ("warehouse", "depot"),
    ("subscription", "recurring plan"),
    ("discount", "price reduction"),
    ("payment", "transaction"),
    ("review", "customer rating"),
    ("forecast", "projection"),
]
ASPECTS = {
    "path": [
        ("raw extract", "unprocessed dump"),
        ("cleaned table", "tidy version"),
        ("daily snapshot", "per-day copy"),
        ("holdout sample", "held-out set"),
        ("lookup table", "mapping file"),
    ],
    "variable": [
        ("model frame", "training data"),
        ("joined frame", "merged table"),
        ("feature matrix", "predictor array"),
        ("pivot", "cross-tab"),
        ("sample", "subset"),
    ],
    "column": [
        ("flag", "indicator"),
        ("amount in euros", "value in EUR"),
        ("date", "day"),
        ("score", "rating number"),
        ("segment", "group label"),
    ],
    "command": [
        ("export", "dump out"),
        ("backfill", "fill in the history of"),
        ("retrain", "fit again"),
        ("refresh", "reload"),
        ("validate", "check"),
    ],
    "number": [
        ("rate", "ratio"),
        ("total", "sum"),
        ("median", "middle value"),
        ("count", "number of records"),
        ("growth", "increase"),
    ],
}
PROBES = {
    "path": "which file was the {}?",
    "variable": "which variable holds the {}?",
    "column": "which column has the {}?",
    "command": "what command did we run to {}?",
    "number": "what was the {}?",
}
SAID = {
    "user": {
        "path": "The {s} is at {v}.",
        "variable": "Please call the {s} {v}.",
        "column": "The {s} is in column {v}.",
        "command": "To {s}, run {v}.",
        "number": "The {s} we must beat is {v}.",
    },
    "answer": {
        "path": "I saved the {s} to {v}.",
        "variable": "The {s} is now in {v}.",
        "column": "The {s} column is {v}.",
        "command": "I ran {v} to {s}.",
        "number": "The {s} came out at {v}.",
    },
    "output": {
        "path": "saved {s} -> {v}",
        "variable": "{v}: DataFrame  1204 rows x 8 cols  # the {s}",
        "column": "{v:<28} float64   {s}",
        "command": "$ {v}    # {s}: ok",
        "number": "{s}: {v}",
    },
}
REQUESTS = [
    "Load the next batch and check the schema",
    "Profile the numeric columns again",
    "Join the new batch with the customer table",
    "Look at the nightly logs",
    "Compare this batch with the previous one",
    "Check the data dictionary for anything new",
    "Aggregate the batch by region",
    "Clean up the date columns",
]
NOISE_COLUMNS = ["order_id", "region", "channel", "qty", "unit_price", "margin", "created", "status", "sku", "store"]


@dataclass
class Plant:
    value: str
    kind: str
    placement: str
    turn: int
    subject: str  # what the text next to it says it is
    probe: str
    paraphrased: bool
    call_id: str = ""  # the step whose output holds it (output placements)
    held_out: str = ""  # the held-out probe
    reworded: str = ""  # the second tuning probe: a fourth vocabulary, other forms (``REWORDED``)


@dataclass
class Step:
    call_id: str
    code: str
    output: str


@dataclass
class Turn:
    user: str
    steps: list[Step]
    answer: str


@dataclass
class Script:
    turns: list[Turn]
    plants: list[Plant] = field(default_factory=list)

    def text(self) -> str:
        parts = []
        for turn in self.turns:
            parts += [turn.user, turn.answer, *(f"{s.code}\n{s.output}" for s in turn.steps)]
        return "\n".join(parts)


def _slug(text: str) -> str:
    return text.replace(" ", "_").replace("-", "_")


def _value(kind: str, index: int, entity: str, aspect: str, rng: random.Random) -> str:
    """The identifier: descriptive for odd indexes (it shares words with its subject), opaque for even ones."""
    n, letter = rng.randrange(10, 99), rng.choice("abcdefghjkmnpq")
    plain = index % 2 == 0
    if kind == "path":
        if plain:
            return f"s3_exports/x{n}_{letter}{index}.parquet"
        return f"data/{_slug(entity)}/{_slug(aspect)}_2024q{index % 4 + 1}.parquet"
    if kind == "variable":
        return f"tmp_{letter}{n}" if plain else f"{_slug(entity)}_{_slug(aspect).split('_')[0]}_v{index}"
    if kind == "column":
        return f"col_{n}{letter}" if plain else f"{_slug(entity)}_{_slug(aspect).split('_')[0]}_{index}"
    if kind == "command":
        if plain:
            return f"make job-{n}{index} TARGET=w{letter}"
        return f"python jobs/{aspect}_{_slug(entity)}.py --since 2024-0{index % 9 + 1}-01"
    if index % 3 == 0:
        return f"{rng.randrange(1, 9)},{rng.randrange(100, 999)},{rng.randrange(100, 999)}"
    if index % 3 == 1:
        return f"{rng.uniform(0.1, 0.99):.5f}"
    return f"{rng.uniform(10, 99):.3f}%"


# The held-out vocabulary: a third name for each entity and aspect, other nouns and verbs for the kinds.
HELD_ENTITIES = {
    "churn": "customers who left",
    "revenue": "turnover",
    "returns": "returned items",
    "signup": "new accounts",
    "inventory": "goods on hand",
    "shipping": "freight",
    "refund": "money given back",
    "loyalty": "member points",
    "fraud": "chargeback risk",
    "pricing": "tariff",
    "marketing spend": "campaign costs",
    "support ticket": "customer complaint",
    "web session": "website visit",
    "supplier": "manufacturer",
    "warehouse": "storage site",
    "subscription": "membership",
    "discount": "markdown",
    "payment": "checkout",
    "review": "feedback score",
    "forecast": "outlook",
}
HELD_ASPECTS = {
    "raw extract": "original export",
    "cleaned table": "clean copy",
    "daily snapshot": "day-by-day copy",
    "holdout sample": "test split",
    "lookup table": "reference mapping",
    "model frame": "modelling dataframe",
    "joined frame": "combined dataset",
    "feature matrix": "inputs array",
    "pivot": "summary grid",
    "sample": "small extract",
    "flag": "marker",
    "amount in euros": "euro value",
    "date": "timestamp",
    "score": "points",
    "segment": "cohort",
    "export": "write out",
    "backfill": "populate the past of",
    "retrain": "train again",
    "refresh": "update",
    "validate": "verify",
    "rate": "percentage",
    "total": "grand total",
    "median": "typical value",
    "count": "number of rows",
    "growth": "rise",
}
HELD_KIND_NAMED = {
    "path": ["where on disk did the {} end up?", "what's the location of the {} dataset?"],
    "variable": ["what name did the {} get in the notebook?", "under which Python name is the {} kept?"],
    "column": ["which field stores the {}?", "what is the field called that carries the {}?"],
    "command": ["how did we {}?", "what did I use to {}?"],
    "number": ["what figure did the {} come to?", "how large was the {}?"],
}
HELD_NO_KIND = ["remind me about the {}", "anything on the {}?"]
HELD_ASSISTANT = ["what did you tell me about the {}?", "you mentioned the {} earlier: what was it?"]


# The second tuning set's vocabulary: a fourth name for each entity and aspect, and forms of its own.
# Like the held-out probes it asks in other words and forms than the session used, so choices that
# help paraphrased questions can be judged on it; it shares no name with the held-out probes.
REWORDED_ENTITIES = {
    "churn": "client defection",
    "revenue": "earnings",
    "returns": "reverse logistics",
    "signup": "enrolment",
    "inventory": "product availability",
    "shipping": "dispatch",
    "refund": "repayment",
    "loyalty": "frequent buyer scheme",
    "fraud": "scam",
    "pricing": "rate card",
    "marketing spend": "promotion expenses",
    "support ticket": "service request",
    "web session": "online browsing",
    "supplier": "wholesaler",
    "warehouse": "distribution centre",
    "subscription": "auto-renewal",
    "discount": "rebate",
    "payment": "settlement",
    "review": "testimonial",
    "forecast": "prediction",
}
REWORDED_ASPECTS = {
    "raw extract": "initial pull",
    "cleaned table": "scrubbed output",
    "daily snapshot": "nightly capture",
    "holdout sample": "evaluation slice",
    "lookup table": "key dictionary",
    "model frame": "estimation table",
    "joined frame": "linked records",
    "feature matrix": "covariates",
    "pivot": "reshaped overview",
    "sample": "random draw",
    "flag": "tick box",
    "amount in euros": "sum paid in the single currency",
    "date": "calendar entry",
    "score": "grade",
    "segment": "bucket",
    "export": "offload",
    "backfill": "rebuild the older records of",
    "retrain": "re-fit",
    "refresh": "bring up to date",
    "validate": "sanity-check",
    "rate": "proportion",
    "total": "overall amount",
    "median": "50th percentile",
    "count": "row tally",
    "growth": "uplift",
}
REWORDED_KIND_NAMED = {
    "path": ["where did we write the {}?", "can you find the file with the {}?"],
    "variable": ["what did we name the {}?", "which object has the {}?"],
    "column": ["the {} lives in which column?", "what's the column name for the {}?"],
    "command": ["what was run to {}?", "which job did we use to {}?"],
    "number": ["what number did we get for the {}?", "the {} was how much?"],
}
REWORDED_NO_KIND = ["tell me again about the {}", "what about the {}?"]
REWORDED_ASSISTANT = ["what was your finding on the {}?", "you reported the {} before; remind me"]


@dataclass(frozen=True)
class Wording:
    """A vocabulary to ask in: other names for each entity and aspect, and the forms of the questions."""

    entities: dict[str, str]
    aspects: dict[str, str]
    kind_named: dict[str, list[str]]  # per kind, two forms naming it (in other nouns)
    no_kind: list[str]  # two forms naming no kind
    assistant: list[str]  # two forms asking about what the assistant said
    unnamed: int  # the index (mod 3) of the identifiers asked about naming no kind

    def probe(self, kind: str, placement: str, index: int, entity: str, aspect: str) -> str:
        """The question for a plant: commands by what they did; of the rest one in three names no kind, and
        what the assistant said is asked as such."""
        other_entity, other_aspect = self.entities[entity], self.aspects[aspect]
        if kind == "command":  # asked by what it did
            return self.kind_named["command"][index % 2].format(f"{other_aspect} the {other_entity} data")
        subject = f"{other_entity} {other_aspect}"
        if index % 3 == self.unnamed:
            return self.no_kind[index % 2].format(subject)
        if placement == "answer":
            return self.assistant[index % 2].format(subject)
        return self.kind_named[kind][index % 2].format(subject)


HELD_OUT = Wording(HELD_ENTITIES, HELD_ASPECTS, HELD_KIND_NAMED, HELD_NO_KIND, HELD_ASSISTANT, unnamed=1)
REWORDED = Wording(
    REWORDED_ENTITIES, REWORDED_ASPECTS, REWORDED_KIND_NAMED, REWORDED_NO_KIND, REWORDED_ASSISTANT, unnamed=2
)


def make_plants(turns: int, seed: int) -> list[Plant]:
    rng = random.Random(seed)
    plants = []
    for kind in KINDS:
        for index, (entity, asked_entity) in enumerate(ENTITIES):
            aspect, asked_aspect = ASPECTS[kind][index % 5]
            if kind == "command":
                subject, asked = f"{aspect} the {entity} data", f"{asked_aspect} the {asked_entity} data"
            else:
                subject, asked = f"{entity} {aspect}", f"{asked_entity} {asked_aspect}"
            paraphrased = index % 3 == 0
            probe = PROBES[kind].format(asked if paraphrased else subject)
            value = _value(kind, index, entity, aspect, rng)
            placement = PLACEMENTS[(index + KINDS.index(kind)) % 4]
            held_out = HELD_OUT.probe(kind, placement, index, entity, aspect)
            reworded = REWORDED.probe(kind, placement, index, entity, aspect)
            plants.append(
                Plant(value, kind, placement, 0, subject, probe, paraphrased, held_out=held_out, reworded=reworded)
            )
    rng.shuffle(plants)
    last = max(1, turns - 8)
    for position, plant in enumerate(plants):
        plant.turn = 1 + position * last // len(plants)
    return plants


def _frame(rng: random.Random, step: int, rows: int) -> str:
    columns = rng.sample(NOISE_COLUMNS, 6)
    lines = ["      " + "  ".join(c.rjust(11) for c in columns)]
    for r in range(rows):
        values = [f"{rng.randrange(10**6)}" if c == "order_id" else f"{rng.uniform(0, 900):.2f}" for c in columns]
        lines.append(f"{r:<6}" + "  ".join(v.rjust(11) for v in values))
    return "\n".join([*lines, f"\n[{rows} rows x 6 columns]  batch_{step}"])


def _long(rng: random.Random, step: int, lines: int, planted: str | None = None) -> str:
    """A long log or data dictionary; ``planted`` goes in its middle."""
    if step % 2:
        out = [
            f"[etl {step}] {rng.choice(['extract', 'clean', 'join'])} batch {i}: {rng.randrange(9999)} records"
            f" in {rng.randrange(5, 900)} ms"
            for i in range(lines)
        ]
    else:
        out = [
            f"{'field_' + str(step) + '_' + str(i):<28} {rng.choice(['int64', 'object', 'float64'])}   "
            f"{rng.choice(['source code', 'free text', 'legacy id', 'derived value'])} {i}"
            for i in range(lines)
        ]
    if planted is not None:
        out.insert(rng.randrange(int(lines * 0.35), int(lines * 0.65)), planted)
    return "\n".join(out)


def make_script(turns: int = 150, seed: int = 11) -> Script:
    rng = random.Random(seed)
    plants = make_plants(turns, seed)
    script = Script([], plants)
    step_no = 0
    for turn_no in range(1, turns + 1):
        here = [p for p in plants if p.turn == turn_no]
        said: dict[str, list[Plant]] = {}
        for plant in here:
            said.setdefault(plant.placement, []).append(plant)
        user = REQUESTS[turn_no % len(REQUESTS)] + "."
        user += "".join(" " + SAID["user"][p.kind].format(s=p.subject, v=p.value) for p in said.get("user", []))
        steps = []
        outputs = [*said.get("small-output", []), *said.get("output-middle", [])]
        for index in range(max(3 + turn_no % 2, len(outputs))):
            step_no += 1
            call_id = f"call_{step_no:04d}"
            code = f'batch_{step_no} = pd.read_parquet("data/batches/part_{step_no:04d}.parquet")\nbatch_{step_no}'
            plant = outputs[index] if index < len(outputs) else None
            line = SAID["output"][plant.kind].format(s=plant.subject, v=plant.value) if plant else None
            if plant is not None:
                plant.call_id = call_id
            if plant and plant.placement == "output-middle":
                output = _long(rng, step_no, 480, line)
            elif plant is None and step_no % 10 == 0:
                output = _long(rng, step_no, 200)
            else:
                output = _frame(rng, step_no, rng.randrange(6, 14)) + (f"\n{line}" if line else "")
            steps.append(Step(call_id, code, output))
        answer = f"Batch checked ({len(steps)} steps); nothing unusual."
        answer += "".join(" " + SAID["answer"][p.kind].format(s=p.subject, v=p.value) for p in said.get("answer", []))
        script.turns.append(Turn(user, steps, answer))
    return script
