"""Small corpora written for the five uses of docs/architecture.md (shared by the library
and server tests)."""

from __future__ import annotations

from pathlib import Path

from ragloom import Document

# -- 1. a writing assistant's story bible -------------------------------------------------
LORE_FILES = {
    "characters.md": """# Characters

## Kaelen Voss
Kaelen Voss is a disgraced cartographer who carries a brass compass that points toward
whatever its holder fears most. He left the Academy after forging a survey of the eastern
marshes, and he still owes the Guild of Lamplighters three years of service.

## Seraphine Dray
Seraphine Dray captains the airship Meridian. She distrusts maps, trusts weather, and keeps
a ledger of every favour owed to her crew.

## Old Thessaly
Old Thessaly runs the ferry across the Grey Sound and speaks only in questions.
""",
    "places.md": """# Places

## Ashfall Spire
Ashfall Spire is a black tower on the rim of the caldera. Ash falls there every evening, and
the observatory at its top holds the last working star-glass.

## The Grey Sound
A cold strait between the mainland and the Salt Isles, crossed by Old Thessaly's ferry.

## Lanternmarket
A night bazaar in the lower city where lamplighters sell contraband light.
""",
    "plot.md": """# Plot

## Act One
The Guild sends Kaelen Voss to Ashfall Spire to recover the star-glass before the Thornwick
cartel can sell it. Seraphine Dray agrees to fly him there in exchange for his compass.

## Act Two
At the Spire, the compass points at Seraphine. Thornwick agents board the Meridian over the
Grey Sound, and Kaelen must choose between the star-glass and the ship.
""",
}


def write_lore(folder: Path) -> Path:
    """Write the lore files into `folder` and return it."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in LORE_FILES.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


# -- 2. a study app's commentary ----------------------------------------------------------
def _comment(
    n: int, scholar: str, tradition: str, chapter: int, verses: str, text: str
) -> Document:
    return Document(
        id=f"{scholar}-rom{chapter}-{n}",
        text=text,
        title=f"Romans {chapter}:{verses}",
        metadata={
            "scholar_id": scholar,
            "tradition": tradition,
            "book_id": "romans",
            "chapter_num": chapter,
            "verse_range": verses,
            "source_type": "commentary",
        },
    )


STUDY_COMMENTARY = [
    _comment(
        1,
        "calvin",
        "reformed",
        9,
        "10-13",
        "Election rests on mercy alone: God chose "
        "Jacob before the twins had done anything good or bad.",
    ),
    _comment(
        2,
        "calvin",
        "reformed",
        9,
        "14-18",
        "Pharaoh's hardening shows that mercy and hardening both serve the purpose of election.",
    ),
    _comment(
        3,
        "calvin",
        "reformed",
        9,
        "19-21",
        "The potter and the clay: no creature may "
        "accuse the maker of injustice in election or in hardening.",
    ),
    _comment(
        4,
        "calvin",
        "reformed",
        8,
        "28-30",
        "Those whom God foreknew he also predestined; "
        "election is the root of calling and of mercy.",
    ),
    _comment(
        5,
        "moo",
        "reformed",
        9,
        "14-18",
        "Moo reads mercy and hardening in Romans 9 as "
        "God's freedom in election, not arbitrary will.",
    ),
    _comment(
        6,
        "moo",
        "reformed",
        11,
        "5-7",
        "A remnant chosen by grace: election and mercy "
        "keep Israel's hope alive though many are hardened.",
    ),
    _comment(
        7,
        "moo",
        "reformed",
        9,
        "22-24",
        "Vessels of mercy prepared for glory: election serves the display of mercy.",
    ),
    _comment(
        8,
        "aquinas",
        "catholic",
        9,
        "10-13",
        "Aquinas: election precedes merit; mercy is "
        "the cause of predestination, and hardening is permitted, not caused.",
    ),
    _comment(
        9,
        "aquinas",
        "catholic",
        9,
        "14-18",
        "On hardening: God withholds grace justly; mercy is given freely in election.",
    ),
    _comment(
        10,
        "aquinas",
        "catholic",
        9,
        "19-21",
        "The potter image shows the order of divine wisdom in election and mercy.",
    ),
    _comment(
        11,
        "luther",
        "lutheran",
        9,
        "14-18",
        "Luther: mercy and hardening humble human "
        "pride; election is comfort for the troubled conscience.",
    ),
    _comment(
        12,
        "luther",
        "lutheran",
        10,
        "9-13",
        "Confession with the mouth and faith in the heart; mercy is for all who call.",
    ),
    _comment(
        13,
        "wright",
        "anglican",
        9,
        "6-13",
        "Wright reads election as vocation: Israel's "
        "story of mercy and hardening serves the covenant.",
    ),
    _comment(
        14,
        "wright",
        "anglican",
        9,
        "14-18",
        "Pharaoh's hardening in the Exodus story: "
        "mercy, election and God's faithfulness to the covenant.",
    ),
    _comment(
        15,
        "barth",
        "reformed",
        9,
        "10-13",
        "Barth: election is first the election of Jesus Christ; mercy and hardening meet in him.",
    ),
    _comment(
        16,
        "origen",
        "patristic",
        9,
        "14-18",
        "Origen on hardening: the same sun melts "
        "wax and hardens clay; mercy and election respect free will.",
    ),
]

STUDY_OPTIONS = {
    "top_k": 10,
    "filters": {"book_id": "romans"},
    "boosts": [
        {"when": {"chapter_num": 9}, "factor": 1.5, "label": "current chapter"},
        {
            "when": {"scholar_id": {"$in": ["calvin", "moo"]}},
            "factor": 1.1,
            "label": "preferred scholars",
        },
        {"when": {"tradition": "reformed"}, "factor": 1.05, "label": "preferred tradition"},
    ],
    "diversity": {"max_per": {"scholar_id": 2}},
}


def expected_study_boost(metadata: dict) -> float:
    """The product of STUDY_OPTIONS' boost factors that apply to a chunk, worked out by hand."""
    factor = 1.0
    if metadata["chapter_num"] == 9:
        factor *= 1.5
    if metadata["scholar_id"] in ("calvin", "moo"):
        factor *= 1.1
    if metadata["tradition"] == "reformed":
        factor *= 1.05
    return factor


# -- 3. a portfolio / docs chat -----------------------------------------------------------
DOCS_POSTS = [
    Document(
        "safe-fetch-helper",
        "The safeFetch helper wraps the browser fetch API. Call safeFetch(url, options) and it "
        "retries failed requests with exponential backoff, aborts after a timeout, and returns "
        "a typed result instead of throwing. Use it for every request to the portfolio API.\n\n"
        "Under the hood safeFetch uses an AbortController per attempt. The default timeout is "
        "eight seconds and the default retry budget is three attempts, with jitter so that "
        "many clients do not hammer the server in lockstep after an outage.\n\n"
        "Errors come back as values: network failures, timeouts and non-2xx statuses each have "
        "their own variant, so the calling component can render the right message.",
        title="A safer fetch helper",
    ),
    Document(
        "sourdough-notes",
        "Feed the starter every morning with equal weights of flour and water, and keep it in a "
        "warm corner of the kitchen. If it smells of nail varnish it is hungry; feed it twice "
        "a day for a while. A healthy culture doubles within six hours and smells of yoghurt.\n\n"
        "Before a long holiday, stiffen it with extra flour and put it in the fridge; it will "
        "sleep for two weeks and wake after two feedings.",
        title="Notes on keeping a levain",
    ),
    Document(
        "portfolio-redesign",
        "This year I rebuilt the portfolio with static pages, a small search box and no "
        "tracking. Pages load in under a second on a slow phone. The redesign dropped the "
        "carousel and the contact form in favour of a plain email link.",
        title="Redesigning my portfolio",
    ),
    Document(
        "hiking-cairngorms",
        "Three days walking in the Cairngorms: snow on the plateau in June, reindeer near "
        "Cairn Gorm and a bothy night with a leaking roof and excellent company.",
        title="Cairngorms in June",
    ),
]


# -- 4. a coding agent's knowledge base -----------------------------------------------------
def _api(doc_id: str, text: str, **metadata) -> Document:
    base = {"domain": "apple", "deprecated": False, "chunk_type": "api_doc", "tags": []}
    return Document(doc_id, text, title=doc_id.replace("-", " "), metadata={**base, **metadata})


CODING_DOCS = [
    _api(
        "swiftdata-modelcontainer",
        "ModelContainer persists your SwiftData models: create it "
        "with the model types, attach it with .modelContainer(for:) and SwiftData saves "
        "changes to the persistent store automatically.",
        tags=["SwiftData", "Persistence"],
        min_os="17.0",
    ),
    _api(
        "swiftdata-query-blog",
        "A blog post on @Query in SwiftData: fetching models in SwiftUI "
        "views, sorting, and filtering with #Predicate.",
        tags=["SwiftData", "SwiftUI"],
        min_os="17.0",
        chunk_type="blog",
    ),
    _api(
        "swiftdata-future-preview",
        "Preview: SwiftData model inheritance, available only on the newest systems.",
        tags=["SwiftData"],
        min_os="19.0",
    ),
    _api(
        "swiftdata-old-migration",
        "Deprecated guidance on migrating SwiftData models with a manual schema plan.",
        tags=["SwiftData"],
        min_os="17.0",
        deprecated=True,
    ),
    _api(
        "coredata-stack",
        "NSPersistentContainer sets up the Core Data stack to persist managed objects.",
        tags=["CoreData", "Persistence"],
        min_os="10.0",
    ),
    _api(
        "nsurlsession-basics",
        "NSURLSession basics: networking with data tasks, delegates and background sessions.",
        tags=["Networking"],
        min_os="9.0",
    ),
    _api(
        "nsurlconnection-legacy",
        "NSURLConnection, the legacy networking API.",
        tags=["Networking"],
        min_os="8.1",
        deprecated=True,
    ),
    _api(
        "urlsession-async",
        "URLSession async/await networking with data(from:).",
        tags=["Networking"],
        min_os="15.0",
    ),
    _api(
        "web-fetch-streams",
        "Persist models in IndexedDB and stream responses with fetch.",
        domain="web",
        tags=["SwiftData-like", "IndexedDB"],
        min_os="0",
    ),
]


# -- 5. a novel-writing app's memory ---------------------------------------------------------
def _chapter(n: int, text: str) -> Document:
    return Document(f"chapter-{n}", text, title=f"Chapter {n}", metadata={"chapter": n})


NOVEL_CHAPTERS = [
    _chapter(
        1,
        "Mira climbed the lighthouse stairs at dusk. The sea lay flat and silver "
        "beneath a pale sky, and the old stone walls smelled of salt.\n\n***\n\n"
        '"You should not be here," Oren said, stepping out of the shadow. "The Warden '
        'counts the lamps every night." Mira laughed and asked him to keep watch.',
    ),
    _chapter(
        2,
        "Years ago, as a child, Mira had heard the drowned bell ring once. She "
        "remembered her mother's face that night.\n\n***\n\nIn the archive Ilse showed "
        "her the ledger, and Mira finally understood: the Warden had been ringing the "
        'drowned bell himself all along. "He knew," Ilse whispered. "He has always '
        'known the truth about the bell." Mira realized the secret was worth killing for.',
    ),
    _chapter(
        3,
        "The current chapter: Mira and Oren argue on the pier about the Warden and the "
        'bell. "We tell the council," Mira said. Oren refused, and she revealed the '
        "ledger's secret to him in anger.",
    ),
    _chapter(
        4,
        "Storm night. Oren ran down the pier and grabbed the mooring rope as the boat "
        "crashed against the stones; Mira dodged a falling spar.\n\n---\n\n"
        "Later the harbour was quiet, and the lamps burned low over the water.",
    ),
]

NOVEL_CHARACTERS = [
    Document(
        "mira",
        "Mira Vale: the lighthouse keeper's daughter; stubborn, curious, afraid of "
        "the drowned bell since childhood.",
    ),
    Document("oren", "Oren Tash: a smuggler who owes Mira a debt; loyal but reckless."),
    Document(
        "warden",
        "The Warden: keeper of the harbour lamps; secretly rings the drowned "
        "bell to hide the wrecks he causes.",
    ),
    Document("ilse", "Ilse Brand: archivist who keeps the harbour ledgers."),
]

NOVEL_WORLD = [
    Document(
        "bells",
        "Rule: the drowned bell rings only for the dead; anyone who rings it "
        "falsely is cursed to hear it forever.",
    ),
    Document("lamps", "Rule: every harbour lamp must be counted nightly by the Warden."),
    Document("tides", "Rule: the causeway floods at every spring tide."),
    Document(
        "council",
        "Rule: the harbour council meets at the new moon and hears any citizen's accusation.",
    ),
]
