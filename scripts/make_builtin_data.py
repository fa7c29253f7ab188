"""Build the project's own small Spider-format dataset, so every command runs with no download.

    python scripts/make_builtin_data.py                      # writes the repository's data/builtin
    python scripts/make_builtin_data.py --out /tmp/builtin   # anywhere else

Six invented SQLite databases (four for train, two for dev: the split is by database, as in
Spider) and a few hundred template-generated questions with gold SQL. The output has Spider's
layout, so the same loader reads it:

    <out>/train_spider.json    [{"db_id", "question", "query"}, ...]
    <out>/dev.json
    <out>/tables.json          Spider schema records, read back from the SQLite files
    <out>/database/<db_id>/<db_id>.sqlite

Everything is deterministic: rows come from `random.Random` seeded by the database name, each
database file is deleted and recreated, and JSON is written with fixed formatting. Running the
script twice gives byte-identical JSON and identical database contents, which
tests/test_builtin_data.py checks. No text, schema or data here comes from Spider.

A question instance is kept only if its gold SQL returns at least one row with a non-NULL value,
returns at most MAX_ANSWER_ROWS rows, and, when it is ordered, its order is not decided by ties.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sqlite3
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "data" / "builtin"
SPLIT_FILES = {"train": "train_spider.json", "dev": "dev.json"}

# Answers longer than this are a dump of a table, not an answer worth learning to write.
MAX_ANSWER_ROWS = 30

# --- word lists (invented for this project) -------------------------------------------------

FIRST_NAMES = (
    "Ada", "Bram", "Celia", "Dorian", "Edda", "Felix", "Greta", "Hugo", "Ines", "Jonas",
    "Kira", "Lucan", "Mira", "Nils", "Oona", "Pavel", "Quinn", "Rosa", "Silas", "Talia",
    "Ulric", "Vera", "Wendel", "Xenia", "Yara", "Zeno", "Amara", "Basil", "Cora", "Dmitri",
)
SURNAMES = (
    "Ashford", "Brightwater", "Calloway", "Dunmore", "Ellery", "Fairbank", "Greaves", "Holloway",
    "Ivers", "Jarrow", "Kettering", "Lindqvist", "Marlowe", "Norcott", "Okafor", "Pemberton",
    "Quarrie", "Rowntree", "Stroud", "Thackery", "Underhill", "Vance", "Whitlock", "Yardley",
)
TITLE_ADJECTIVES = (
    "Silent", "Amber", "Hollow", "Crimson", "Winter", "Distant", "Gilded", "Quiet", "Broken",
    "Northern", "Velvet", "Salt",
)
TITLE_NOUNS = (
    "Harbor", "Orchard", "Lantern", "River", "Compass", "Garden", "Tower", "Meadow", "Letter",
    "Voyage", "Mirror", "Forest",
)
BOOK_GENRES = ("Mystery", "Fantasy", "Poetry", "History", "Science", "Romance", "Biography")
AUTHOR_COUNTRIES = ("Ireland", "Norway", "Chile", "Kenya", "Canada", "Japan", "Portugal")
LIBRARY_TOWNS = ("Ashby", "Bellmoor", "Cranfield", "Dunhollow", "Fernhill")

SPECIALTIES = ("Cardiology", "Dermatology", "Pediatrics", "Neurology", "General Practice", "Orthopedics")
CLINIC_TOWNS = ("Glenrock", "Harwick", "Lowbridge", "Millbrook", "Stonehaven")
BLOOD_TYPES = ("O+", "O-", "A+", "A-", "B+", "AB+")
VISIT_TYPES = ("checkup", "follow-up", "urgent", "vaccination")
MEDICATIONS = ("Calmorin", "Dexavol", "Florinex", "Mentazol", "Norvexa", "Pyralin", "Serotab", "Velcort")

STATION_NAMES = (
    "Canal Street", "Mill Square", "Orchard Gate", "Quarry Lane", "Tannery Yard", "Harbour Steps",
    "Clock Tower", "Rope Walk", "Market Cross", "Old Bridge", "Station Road", "Glass Works",
)
DISTRICTS = ("Northgate", "Riverside", "Old Town", "Eastfield")
BIKE_MODELS = {  # bike_type -> (models, hourly rate in pounds)
    "city": (("Roamer", "Commuter Plus"), 2.5),
    "electric": (("Volt Glide", "Spark E2"), 4.0),
    "mountain": (("Ridge Runner", "Scree 29"), 3.5),
    "cargo": (("Packhorse",), 5.0),
}
MEMBERSHIPS = ("casual", "monthly", "annual")

STAGE_NAMES = (
    "Meadow Stage", "Willow Tent", "Lakeside Stage", "Barn Stage", "Orchard Tent", "Hilltop Stage",
    "Fireside Tent", "Courtyard Stage", "Bandstand", "Woodland Stage",
)
BAND_ADJECTIVES = ("Copper", "Velvet", "Hollow", "Wandering", "Paper", "Midnight", "Golden", "Rusty")
BAND_NOUNS = ("Owls", "Foxes", "Ravens", "Tides", "Pines", "Kettles", "Sparrows", "Embers")
MUSIC_GENRES = ("folk", "bluegrass", "indie", "jazz", "blues", "world")
ARTIST_COUNTRIES = ("Ireland", "Scotland", "Norway", "Canada", "Brazil", "Mali", "Australia")
FESTIVAL_DATES = ("2025-07-18", "2025-07-19", "2025-07-20")
VENDOR_WORDS = ("Golden", "Smoky", "Little", "Wild", "Happy", "Crooked", "Sunny", "Merry")
VENDOR_THINGS = {
    "food": ("Crust", "Skillet", "Dumpling", "Griddle"),
    "drinks": ("Kettle", "Cider Barrel", "Brew"),
    "crafts": ("Loom", "Woodshop", "Pottery"),
    "clothing": ("Thread", "Hatbox"),
}

SUBJECT_COURSES = {
    "Mathematics": ("Algebra Foundations", "Geometry", "Statistics"),
    "Biology": ("Cell Biology", "Ecology"),
    "Chemistry": ("Organic Chemistry", "Lab Chemistry"),
    "History": ("Ancient History", "Modern History"),
    "Literature": ("Poetry Workshop", "World Novels", "Drama Studies"),
    "Geography": ("Maps and Climate", "Urban Geography"),
    "Music": ("Choir", "Music Theory"),
    "Art": ("Drawing", "Sculpture", "Art History"),
}
HOUSES = ("Oak", "Birch", "Cedar", "Pine", "Rowan")
TERMS = ("Autumn", "Spring")

PORT_NAMES = (
    "Port Alder", "Brackwater", "Cindermouth", "Dunlin Bay", "Eastreach", "Fallowhaven",
    "Gullsend", "Hollin Quay", "Kestrel Point", "Larkspur Harbour", "Mistle Cove", "Northmere",
)
PORT_COUNTRIES = ("Norway", "Denmark", "Belgium", "Ireland", "Portugal")
VESSEL_ADJECTIVES = ("Northern", "Silver", "Steady", "Grey", "Bold", "Morning")
VESSEL_NOUNS = ("Petrel", "Heron", "Tern", "Gannet", "Curlew", "Plover")
VESSEL_TYPES = ("container", "tanker", "bulk carrier", "ro-ro")
COMMODITIES = {  # commodity -> (value per tonne, is hazardous)
    "grain": (310, 0), "timber": (420, 0), "steel": (760, 0), "fertiliser": (380, 1),
    "crude oil": (520, 1), "machinery": (2900, 0), "fish": (1800, 0), "cement": (120, 0),
}


# --- small helpers for generated rows -------------------------------------------------------


def person_names(rng: random.Random, count: int) -> list[str]:
    """`count` different full names."""
    return rng.sample([f"{first} {last}" for first in FIRST_NAMES for last in SURNAMES], count)


def random_date(rng: random.Random, first: date, last: date) -> str:
    """An ISO date (YYYY-MM-DD) between first and last, inclusive: dates are stored as TEXT."""
    return (first + timedelta(days=rng.randint(0, (last - first).days))).isoformat()


def shift_date(iso_date: str, days: int) -> str:
    return (date.fromisoformat(iso_date) + timedelta(days=days)).isoformat()


def choices(name: str, values: tuple) -> tuple[dict, ...]:
    """Fixed parameter rows for a template: one slot `name` per value."""
    return tuple({name: value} for value in values)


# --- templates ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Template:
    """One question pattern: English phrasings and a gold SQL query with {slot}s.

    The slots are filled from `params`: a SQL query over the database (its column names are the
    slot names), or fixed rows. `count` instances are drawn, each with the next phrasing.
    """

    phrasings: tuple[str, ...]
    query: str
    params: str | tuple[dict, ...] | None = None
    count: int = 1


@dataclass(frozen=True)
class DatabaseSpec:
    """An invented database: its DDL, a row generator, its split and its question templates."""

    db_id: str
    split: str
    schema: str
    make_rows: Callable[[random.Random], dict[str, list[tuple]]]
    templates: tuple[Template, ...]


# --- database 1: town_library (train) -------------------------------------------------------

LIBRARY_SCHEMA = """
CREATE TABLE author (
    author_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    country TEXT NOT NULL,
    birth_year INTEGER NOT NULL
);
CREATE TABLE book (
    book_id INTEGER PRIMARY KEY,
    title TEXT NOT NULL,
    author_id INTEGER NOT NULL,
    genre TEXT NOT NULL,
    publish_year INTEGER NOT NULL,
    page_count INTEGER NOT NULL,
    copies INTEGER NOT NULL,
    FOREIGN KEY (author_id) REFERENCES author (author_id)
);
CREATE TABLE member (
    member_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    city TEXT NOT NULL,
    join_date TEXT NOT NULL,
    is_student INTEGER NOT NULL
);
CREATE TABLE loan (
    loan_id INTEGER PRIMARY KEY,
    book_id INTEGER NOT NULL,
    member_id INTEGER NOT NULL,
    loan_date TEXT NOT NULL,
    due_date TEXT NOT NULL,
    status TEXT NOT NULL,
    late_fee REAL NOT NULL,
    FOREIGN KEY (book_id) REFERENCES book (book_id),
    FOREIGN KEY (member_id) REFERENCES member (member_id)
);
"""


def library_rows(rng: random.Random) -> dict[str, list[tuple]]:
    names = person_names(rng, 14 + 30)
    birth_years = rng.sample(range(1920, 1995), 14)
    authors = [(i + 1, names[i], rng.choice(AUTHOR_COUNTRIES), birth_years[i]) for i in range(14)]
    titles = rng.sample([f"The {adjective} {noun}" for adjective in TITLE_ADJECTIVES for noun in TITLE_NOUNS], 40)
    publish_years = rng.sample(range(1950, 2024), 40)
    page_counts = rng.sample(range(96, 720), 40)
    books = []
    for i in range(40):
        eligible = [author for author in authors if author[3] <= publish_years[i] - 22]
        author = rng.choice(eligible)
        books.append((i + 1, titles[i], author[0], rng.choice(BOOK_GENRES), publish_years[i], page_counts[i], rng.randint(1, 8)))
    members = [
        (i + 1, names[14 + i], rng.choice(LIBRARY_TOWNS), random_date(rng, date(2015, 1, 1), date(2024, 6, 30)), int(rng.random() < 0.35))
        for i in range(30)
    ]
    loans = []
    for i in range(60):
        loan_date = random_date(rng, date(2024, 7, 1), date(2025, 3, 31))
        status = rng.choices(("returned", "active", "overdue"), weights=(7, 2, 1))[0]
        if status == "overdue":
            late_fee = round(rng.uniform(0.5, 6.0), 2)
        elif status == "returned" and rng.random() < 0.2:
            late_fee = round(rng.uniform(0.2, 2.0), 2)
        else:
            late_fee = 0.0
        # members 25-30 never borrow, so "members with no loans" has an answer
        loans.append((i + 1, rng.randint(1, 40), rng.randint(1, 24), loan_date, shift_date(loan_date, 21), status, late_fee))
    return {"author": authors, "book": books, "member": members, "loan": loans}


LIBRARY_TEMPLATES = (
    # easy
    Template(("How many books does the library hold?", "Count the books in the catalogue.", "What is the total number of books?"),
             "SELECT count(*) FROM book"),
    Template(("How many {genre} books are there?", "Count the books whose genre is {genre}.", "What is the number of books in the {genre} genre?"),
             "SELECT count(*) FROM book WHERE genre = '{genre}'", "SELECT DISTINCT genre FROM book", 3),
    Template(("List the titles of books published after {year}.", "Which books came out after {year}? Give their titles."),
             "SELECT title FROM book WHERE publish_year > {year}", "SELECT publish_year AS year FROM book ORDER BY publish_year DESC LIMIT 12", 2),
    Template(("What is the average page count of the books?", "On average, how many pages does a book have?"),
             "SELECT avg(page_count) FROM book"),
    Template(("What are the names of the members who live in {city}?", "List the members from {city}.", "Which library members have {city} as their city?"),
             "SELECT name FROM member WHERE city = '{city}'", "SELECT DISTINCT city FROM member", 2),
    Template(("Which countries do the authors come from?", "List the distinct countries of the authors."),
             "SELECT DISTINCT country FROM author"),
    Template(("What is the largest number of copies the library holds of a single book?",),
             "SELECT max(copies) FROM book"),
    Template(("How many loans have the status {status}?", "Count the loans whose status is {status}."),
             "SELECT count(*) FROM loan WHERE status = '{status}'", "SELECT DISTINCT status FROM loan", 2),
    Template(("List the names of all authors from the oldest to the youngest.", "Show every author's name, sorted by birth year in ascending order."),
             "SELECT name FROM author ORDER BY birth_year"),
    Template(("How many members are students?", "Count the library members who are students."),
             "SELECT count(*) FROM member WHERE is_student = 1"),
    Template(("What is the total of all late fees charged on loans?", "Sum up the late fees of every loan."),
             "SELECT sum(late_fee) FROM loan"),
    Template(("Which genres have at least {k} books?", "List the genres with {k} or more books."),
             "SELECT genre FROM book GROUP BY genre HAVING count(*) >= {k}", choices("k", (5, 6, 7)), 2),
    Template(("What is the average late fee of overdue loans?",),
             "SELECT avg(late_fee) FROM loan WHERE status = 'overdue'"),
    Template(("Which members joined the library after {date}? Give their names.",),
             "SELECT name FROM member WHERE join_date > '{date}'", "SELECT join_date AS date FROM member ORDER BY join_date DESC LIMIT 10"),
    # medium
    Template(("List the title and page count of every {genre} book.", "For {genre} books, show each title together with its number of pages."),
             "SELECT title, page_count FROM book WHERE genre = '{genre}'", "SELECT DISTINCT genre FROM book", 2),
    Template(("How many books are there in each genre?", "For each genre, give the genre and its number of books."),
             "SELECT genre, count(*) FROM book GROUP BY genre"),
    Template(("Which book has the most pages?", "What is the title of the longest book?"),
             "SELECT title FROM book ORDER BY page_count DESC LIMIT 1"),
    Template(("What is the title of the earliest published book?", "Which book was published first?"),
             "SELECT title FROM book ORDER BY publish_year LIMIT 1"),
    Template(("What are the titles of the books written by {author}?", "List the books by the author {author}.", "Which books did {author} write?"),
             "SELECT T1.title FROM book AS T1 JOIN author AS T2 ON T1.author_id = T2.author_id WHERE T2.name = '{author}'",
             "SELECT DISTINCT T2.name AS author FROM book AS T1 JOIN author AS T2 ON T1.author_id = T2.author_id", 3),
    Template(("How many loans has {member} made?", "Count the loans of the member named {member}."),
             "SELECT count(*) FROM loan AS T1 JOIN member AS T2 ON T1.member_id = T2.member_id WHERE T2.name = '{member}'",
             "SELECT DISTINCT T2.name AS member FROM loan AS T1 JOIN member AS T2 ON T1.member_id = T2.member_id", 2),
    Template(("What are the smallest and largest page counts among the books?", "Give the minimum and maximum number of pages of a book."),
             "SELECT min(page_count), max(page_count) FROM book"),
    Template(("What is the average page count of the books in each genre?",),
             "SELECT genre, avg(page_count) FROM book GROUP BY genre"),
    Template(("Which {genre} books were published before {year}?", "Give the titles of {genre} books published earlier than {year}."),
             "SELECT title FROM book WHERE genre = '{genre}' AND publish_year < {year}", "SELECT genre, publish_year + 5 AS year FROM book", 2),
    Template(("Give the names of the members who live in {city1} or {city2}.",),
             "SELECT name FROM member WHERE city = '{city1}' OR city = '{city2}'",
             "SELECT DISTINCT A.city AS city1, B.city AS city2 FROM member AS A, member AS B WHERE A.city < B.city"),
    Template(("Which book titles contain the word {word}?", "Find the books whose title includes '{word}'."),
             "SELECT title FROM book WHERE title LIKE '%{word}%'", choices("word", TITLE_NOUNS), 2),
    Template(("Show the name and country of the authors born before {year}.",),
             "SELECT name, country FROM author WHERE birth_year < {year}", "SELECT birth_year + 1 AS year FROM author ORDER BY birth_year LIMIT 8"),
    Template(("How many loans were made by members from each city?", "For every city, count the loans of members living there."),
             "SELECT T2.city, count(*) FROM loan AS T1 JOIN member AS T2 ON T1.member_id = T2.member_id GROUP BY T2.city"),
    Template(("How many books has each author written? Show author names and counts.",),
             "SELECT T2.name, count(*) FROM book AS T1 JOIN author AS T2 ON T1.author_id = T2.author_id GROUP BY T2.author_id"),
    Template(("For each loan status, what is the average late fee, rounded to 2 decimal places?",),
             "SELECT status, round(avg(late_fee), 2) FROM loan GROUP BY status"),
    Template(("How many different members have borrowed a {genre} book?",),
             "SELECT count(DISTINCT T2.member_id) FROM book AS T1 JOIN loan AS T2 ON T1.book_id = T2.book_id WHERE T1.genre = '{genre}'",
             "SELECT DISTINCT genre FROM book"),
    # hard
    Template(("Which books have more pages than the average book? List their titles.",),
             "SELECT title FROM book WHERE page_count > (SELECT avg(page_count) FROM book)"),
    Template(("Which members have never borrowed a book?", "Find the names of members with no loans."),
             "SELECT name FROM member WHERE member_id NOT IN (SELECT member_id FROM loan)"),
    Template(("Which genre has the most books?",),
             "SELECT genre FROM book GROUP BY genre ORDER BY count(*) DESC LIMIT 1"),
    Template(("Which genre has the fewest books?",),
             "SELECT genre FROM book GROUP BY genre ORDER BY count(*) LIMIT 1"),
    Template(("What are the distinct titles of books borrowed by members living in {city}?", "Which books have been lent to members from {city}?"),
             "SELECT DISTINCT T1.title FROM book AS T1 JOIN loan AS T2 ON T1.book_id = T2.book_id JOIN member AS T3 ON T2.member_id = T3.member_id WHERE T3.city = '{city}'",
             "SELECT DISTINCT city FROM member", 2),
    Template(("List the titles of books by authors from {country}, ordered by publication year.", "Show the books written by authors from {country}, oldest publication first."),
             "SELECT T1.title FROM book AS T1 JOIN author AS T2 ON T1.author_id = T2.author_id WHERE T2.country = '{country}' ORDER BY T1.publish_year",
             "SELECT DISTINCT country FROM author", 2),
    Template(("Which genres have books published both before {y1} and after {y2}?",),
             "SELECT genre FROM book WHERE publish_year < {y1} INTERSECT SELECT genre FROM book WHERE publish_year > {y2}",
             ({"y1": 1975, "y2": 2005}, {"y1": 1980, "y2": 2010})),
    Template(("Which cities have both student and non-student members?",),
             "SELECT city FROM member WHERE is_student = 1 INTERSECT SELECT city FROM member WHERE is_student = 0"),
    Template(("What is the title of the book with the most copies?", "Which book does the library hold the most copies of?"),
             "SELECT title FROM book WHERE copies = (SELECT max(copies) FROM book)"),
    Template(("What are the minimum and maximum page counts of {genre} books published after {year}?",),
             "SELECT min(page_count), max(page_count) FROM book WHERE genre = '{genre}' AND publish_year > {year}",
             "SELECT genre, publish_year - 10 AS year FROM book"),
    Template(("Which authors have not written any {genre} book?",),
             "SELECT name FROM author EXCEPT SELECT T2.name FROM book AS T1 JOIN author AS T2 ON T1.author_id = T2.author_id WHERE T1.genre = '{genre}'",
             "SELECT DISTINCT genre FROM book"),
    Template(("Which genres have an average page count above the average over all books?",),
             "SELECT genre FROM book GROUP BY genre HAVING avg(page_count) > (SELECT avg(page_count) FROM book)"),
    # extra
    Template(("Which member has made the most loans?", "Who borrowed books most often?"),
             "SELECT T2.name FROM loan AS T1 JOIN member AS T2 ON T1.member_id = T2.member_id GROUP BY T1.member_id ORDER BY count(*) DESC LIMIT 1"),
    Template(("Which author has written the most books?",),
             "SELECT T2.name FROM book AS T1 JOIN author AS T2 ON T1.author_id = T2.author_id GROUP BY T1.author_id ORDER BY count(*) DESC LIMIT 1"),
    Template(("Which authors have written both {g1} and {g2} books?",),
             "SELECT T2.name FROM book AS T1 JOIN author AS T2 ON T1.author_id = T2.author_id WHERE T1.genre = '{g1}' INTERSECT SELECT T2.name FROM book AS T1 JOIN author AS T2 ON T1.author_id = T2.author_id WHERE T1.genre = '{g2}'",
             "SELECT DISTINCT A.genre AS g1, B.genre AS g2 FROM book AS A, book AS B WHERE A.genre < B.genre", 2),
    Template(("Which books that are longer than the average book have been borrowed at least once?",),
             "SELECT DISTINCT T1.title FROM book AS T1 JOIN loan AS T2 ON T1.book_id = T2.book_id WHERE T1.page_count > (SELECT avg(page_count) FROM book)"),
    Template(("Which three members have paid the most in late fees? Show each name and total.",),
             "SELECT T2.name, sum(T1.late_fee) FROM loan AS T1 JOIN member AS T2 ON T1.member_id = T2.member_id GROUP BY T1.member_id ORDER BY sum(T1.late_fee) DESC LIMIT 3"),
    Template(("Members from which city have paid the highest total of late fees?",),
             "SELECT T2.city FROM loan AS T1 JOIN member AS T2 ON T1.member_id = T2.member_id GROUP BY T2.city ORDER BY sum(T1.late_fee) DESC LIMIT 1"),
    Template(("List the titles of books written by authors from {country} or belonging to the {genre} genre.",),
             "SELECT T1.title FROM book AS T1 JOIN author AS T2 ON T1.author_id = T2.author_id WHERE T2.country = '{country}' UNION SELECT title FROM book WHERE genre = '{genre}'",
             "SELECT DISTINCT T2.country, T1.genre FROM book AS T1 JOIN author AS T2 ON T1.author_id = T2.author_id"),
    Template(("Which members borrowed a {g1} book but never a {g2} book?",),
             "SELECT T3.name FROM book AS T1 JOIN loan AS T2 ON T1.book_id = T2.book_id JOIN member AS T3 ON T2.member_id = T3.member_id WHERE T1.genre = '{g1}' EXCEPT SELECT T3.name FROM book AS T1 JOIN loan AS T2 ON T1.book_id = T2.book_id JOIN member AS T3 ON T2.member_id = T3.member_id WHERE T1.genre = '{g2}'",
             "SELECT DISTINCT A.genre AS g1, B.genre AS g2 FROM book AS A, book AS B WHERE A.genre != B.genre"),
)

# --- database 2: family_clinic (train) ------------------------------------------------------

CLINIC_SCHEMA = """
CREATE TABLE doctor (
    doctor_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    specialty TEXT NOT NULL,
    years_experience INTEGER NOT NULL,
    consultation_fee REAL NOT NULL
);
CREATE TABLE patient (
    patient_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    birth_year INTEGER NOT NULL,
    city TEXT NOT NULL,
    blood_type TEXT NOT NULL,
    has_insurance INTEGER NOT NULL
);
CREATE TABLE appointment (
    appointment_id INTEGER PRIMARY KEY,
    doctor_id INTEGER NOT NULL,
    patient_id INTEGER NOT NULL,
    appointment_date TEXT NOT NULL,
    visit_type TEXT NOT NULL,
    duration_minutes INTEGER NOT NULL,
    total_cost REAL NOT NULL,
    FOREIGN KEY (doctor_id) REFERENCES doctor (doctor_id),
    FOREIGN KEY (patient_id) REFERENCES patient (patient_id)
);
CREATE TABLE prescription (
    prescription_id INTEGER PRIMARY KEY,
    appointment_id INTEGER NOT NULL,
    medication TEXT NOT NULL,
    dose_mg INTEGER NOT NULL,
    days_supply INTEGER NOT NULL,
    FOREIGN KEY (appointment_id) REFERENCES appointment (appointment_id)
);
"""


def clinic_rows(rng: random.Random) -> dict[str, list[tuple]]:
    names = person_names(rng, 12 + 40)
    experience = rng.sample(range(2, 36), 12)
    doctors = [
        (i + 1, names[i], SPECIALTIES[i % len(SPECIALTIES)] if i < 8 else rng.choice(SPECIALTIES), experience[i], float(rng.randrange(60, 225, 5)))
        for i in range(12)
    ]
    birth_years = rng.sample(range(1940, 2021), 40)
    patients = [
        (i + 1, names[12 + i], birth_years[i], rng.choice(CLINIC_TOWNS), rng.choice(BLOOD_TYPES), int(rng.random() < 0.75))
        for i in range(40)
    ]
    appointments = []
    for i in range(60):
        doctor = rng.choice(doctors)
        duration = rng.choice((15, 20, 30, 45, 60))
        cost = round(doctor[4] * duration / 30 + rng.uniform(0, 40), 2)
        # patients 35-40 have no appointments, so "patients never seen" has an answer
        appointments.append((i + 1, doctor[0], rng.randint(1, 34), random_date(rng, date(2024, 1, 2), date(2024, 12, 20)),
                             rng.choices(VISIT_TYPES, weights=(4, 3, 2, 1))[0], duration, cost))
    prescriptions = [
        (i + 1, rng.randint(1, 60), rng.choice(MEDICATIONS), rng.choice((5, 10, 20, 25, 50, 100, 250, 500)), rng.choice((7, 10, 14, 30, 60, 90)))
        for i in range(45)
    ]
    return {"doctor": doctors, "patient": patients, "appointment": appointments, "prescription": prescriptions}


MONTHS_2024 = (
    {"month": "March", "start": "2024-03-01", "end": "2024-03-31"},
    {"month": "June", "start": "2024-06-01", "end": "2024-06-30"},
    {"month": "October", "start": "2024-10-01", "end": "2024-10-31"},
)

CLINIC_TEMPLATES = (
    # easy
    Template(("How many doctors work at the clinic?", "Count the doctors."),
             "SELECT count(*) FROM doctor"),
    Template(("How many patients live in {city}?", "What is the number of patients from {city}?"),
             "SELECT count(*) FROM patient WHERE city = '{city}'", "SELECT DISTINCT city FROM patient", 2),
    Template(("List the names of doctors whose specialty is {specialty}.", "Which doctors specialise in {specialty}?"),
             "SELECT name FROM doctor WHERE specialty = '{specialty}'", "SELECT DISTINCT specialty FROM doctor", 2),
    Template(("What is the average consultation fee of the doctors?",),
             "SELECT avg(consultation_fee) FROM doctor"),
    Template(("Which blood types do the patients have? List each type once.",),
             "SELECT DISTINCT blood_type FROM patient"),
    Template(("How many patients have insurance?", "Count the insured patients."),
             "SELECT count(*) FROM patient WHERE has_insurance = 1"),
    Template(("What is the longest appointment duration in minutes?",),
             "SELECT max(duration_minutes) FROM appointment"),
    Template(("How many {visit_type} appointments were there?", "Count the appointments whose visit type is {visit_type}."),
             "SELECT count(*) FROM appointment WHERE visit_type = '{visit_type}'", choices("visit_type", VISIT_TYPES), 2),
    Template(("Which patients were born before {year}? Give their names.",),
             "SELECT name FROM patient WHERE birth_year < {year}", "SELECT birth_year AS year FROM patient ORDER BY birth_year LIMIT 10 OFFSET 2"),
    Template(("How many different medications have been prescribed?",),
             "SELECT count(DISTINCT medication) FROM prescription"),
    Template(("List the doctors' names from the most to the least experienced.",),
             "SELECT name FROM doctor ORDER BY years_experience DESC"),
    Template(("What is the total cost of all {visit_type} appointments?", "Add up the total cost of every {visit_type} appointment."),
             "SELECT sum(total_cost) FROM appointment WHERE visit_type = '{visit_type}'", choices("visit_type", VISIT_TYPES), 2),
    Template(("How many appointments took place in {month} 2024?",),
             "SELECT count(*) FROM appointment WHERE appointment_date BETWEEN '{start}' AND '{end}'", MONTHS_2024, 2),
    Template(("Which specialties have at least two doctors?",),
             "SELECT specialty FROM doctor GROUP BY specialty HAVING count(*) >= 2"),
    Template(("What is the average total cost of {visit_type} appointments, rounded to 2 decimals?",),
             "SELECT round(avg(total_cost), 2) FROM appointment WHERE visit_type = '{visit_type}'", choices("visit_type", VISIT_TYPES)),
    # medium
    Template(("Show the name and years of experience of doctors whose consultation fee is above {fee}.",),
             "SELECT name, years_experience FROM doctor WHERE consultation_fee > {fee}", "SELECT consultation_fee AS fee FROM doctor"),
    Template(("How many doctors are there in each specialty?",),
             "SELECT specialty, count(*) FROM doctor GROUP BY specialty"),
    Template(("How many patients have each blood type?", "For every blood type, count the patients who have it."),
             "SELECT blood_type, count(*) FROM patient GROUP BY blood_type"),
    Template(("Which doctor has the most years of experience?", "Who is the most experienced doctor?"),
             "SELECT name FROM doctor ORDER BY years_experience DESC LIMIT 1"),
    Template(("Who is the youngest patient?", "What is the name of the patient born most recently?"),
             "SELECT name FROM patient ORDER BY birth_year DESC LIMIT 1"),
    Template(("How many appointments did {doctor} have?", "Count the appointments with the doctor {doctor}."),
             "SELECT count(*) FROM appointment AS T1 JOIN doctor AS T2 ON T1.doctor_id = T2.doctor_id WHERE T2.name = '{doctor}'",
             "SELECT name AS doctor FROM doctor", 2),
    Template(("On which dates did {patient} have appointments?", "List the appointment dates of the patient {patient}."),
             "SELECT T1.appointment_date FROM appointment AS T1 JOIN patient AS T2 ON T1.patient_id = T2.patient_id WHERE T2.name = '{patient}'",
             "SELECT DISTINCT T2.name AS patient FROM appointment AS T1 JOIN patient AS T2 ON T1.patient_id = T2.patient_id", 2),
    Template(("What is the average duration of each type of visit?",),
             "SELECT visit_type, avg(duration_minutes) FROM appointment GROUP BY visit_type"),
    Template(("What are the lowest and highest doses in mg prescribed of {medication}?",),
             "SELECT min(dose_mg), max(dose_mg) FROM prescription WHERE medication = '{medication}'", "SELECT DISTINCT medication FROM prescription", 2),
    Template(("Which doctors specialise in {s1} or {s2}?",),
             "SELECT name FROM doctor WHERE specialty = '{s1}' OR specialty = '{s2}'",
             "SELECT DISTINCT A.specialty AS s1, B.specialty AS s2 FROM doctor AS A, doctor AS B WHERE A.specialty < B.specialty"),
    Template(("Which patients from {city} have no insurance?", "List the uninsured patients living in {city}."),
             "SELECT name FROM patient WHERE city = '{city}' AND has_insurance = 0", "SELECT DISTINCT city FROM patient", 2),
    Template(("Which patients have a name starting with {letter}?",),
             "SELECT name FROM patient WHERE name LIKE '{letter}%'", "SELECT DISTINCT substr(name, 1, 1) AS letter FROM patient", 2),
    Template(("How many appointments has each specialty handled?",),
             "SELECT T2.specialty, count(*) FROM appointment AS T1 JOIN doctor AS T2 ON T1.doctor_id = T2.doctor_id GROUP BY T2.specialty"),
    Template(("Show the name and city of patients born between {y1} and {y2}.",),
             "SELECT name, city FROM patient WHERE birth_year BETWEEN {y1} AND {y2}",
             ({"y1": 1950, "y2": 1959}, {"y1": 1970, "y2": 1979}, {"y1": 1990, "y2": 1999})),
    Template(("Which medications were prescribed during {visit_type} appointments?",),
             "SELECT DISTINCT T2.medication FROM appointment AS T1 JOIN prescription AS T2 ON T1.appointment_id = T2.appointment_id WHERE T1.visit_type = '{visit_type}'",
             choices("visit_type", VISIT_TYPES), 2),
    # hard
    Template(("Which doctors charge a consultation fee above the average?",),
             "SELECT name FROM doctor WHERE consultation_fee > (SELECT avg(consultation_fee) FROM doctor)"),
    Template(("Which patients have never had an appointment?", "List the patients with no appointments."),
             "SELECT name FROM patient WHERE patient_id NOT IN (SELECT patient_id FROM appointment)"),
    Template(("What is the most common type of visit?",),
             "SELECT visit_type FROM appointment GROUP BY visit_type ORDER BY count(*) DESC LIMIT 1"),
    Template(("Which medication has been prescribed most often?",),
             "SELECT medication FROM prescription GROUP BY medication ORDER BY count(*) DESC LIMIT 1"),
    Template(("Which patients have seen {doctor}?", "List the distinct patients who had an appointment with {doctor}."),
             "SELECT DISTINCT T3.name FROM appointment AS T1 JOIN doctor AS T2 ON T1.doctor_id = T2.doctor_id JOIN patient AS T3 ON T1.patient_id = T3.patient_id WHERE T2.name = '{doctor}'",
             "SELECT name AS doctor FROM doctor", 2),
    Template(("List the date and total cost of appointments with {specialty} doctors, most expensive first.",),
             "SELECT T1.appointment_date, T1.total_cost FROM appointment AS T1 JOIN doctor AS T2 ON T1.doctor_id = T2.doctor_id WHERE T2.specialty = '{specialty}' ORDER BY T1.total_cost DESC",
             "SELECT DISTINCT specialty FROM doctor"),
    Template(("Which cities have both insured and uninsured patients?",),
             "SELECT city FROM patient WHERE has_insurance = 1 INTERSECT SELECT city FROM patient WHERE has_insurance = 0"),
    Template(("Which medications have never been prescribed at a dose above {dose} mg?",),
             "SELECT medication FROM prescription EXCEPT SELECT medication FROM prescription WHERE dose_mg > {dose}", choices("dose", (50, 100, 250))),
    Template(("For {visit_type} appointments longer than 20 minutes, how many are there and what is their average duration?",),
             "SELECT count(*), avg(duration_minutes) FROM appointment WHERE visit_type = '{visit_type}' AND duration_minutes > 20",
             choices("visit_type", VISIT_TYPES)),
    Template(("Which patients were born earlier than the average birth year of all patients?",),
             "SELECT name FROM patient WHERE birth_year < (SELECT avg(birth_year) FROM patient)"),
    Template(("Which doctors have had at least one {visit_type} appointment?",),
             "SELECT name FROM doctor WHERE doctor_id IN (SELECT doctor_id FROM appointment WHERE visit_type = '{visit_type}')",
             choices("visit_type", VISIT_TYPES), 2),
    # extra
    Template(("Which doctor has had the most appointments?",),
             "SELECT T2.name FROM appointment AS T1 JOIN doctor AS T2 ON T1.doctor_id = T2.doctor_id GROUP BY T1.doctor_id ORDER BY count(*) DESC LIMIT 1"),
    Template(("Which patient has spent the most in total on appointments?",),
             "SELECT T2.name FROM appointment AS T1 JOIN patient AS T2 ON T1.patient_id = T2.patient_id GROUP BY T1.patient_id ORDER BY sum(T1.total_cost) DESC LIMIT 1"),
    Template(("Which specialties have had both urgent and checkup appointments?",),
             "SELECT T2.specialty FROM appointment AS T1 JOIN doctor AS T2 ON T1.doctor_id = T2.doctor_id WHERE T1.visit_type = 'urgent' INTERSECT SELECT T2.specialty FROM appointment AS T1 JOIN doctor AS T2 ON T1.doctor_id = T2.doctor_id WHERE T1.visit_type = 'checkup'"),
    Template(("Name the three doctors whose prescriptions add up to the most days of supply, with each total.",),
             "SELECT T3.name, sum(T1.days_supply) FROM prescription AS T1 JOIN appointment AS T2 ON T1.appointment_id = T2.appointment_id JOIN doctor AS T3 ON T2.doctor_id = T3.doctor_id GROUP BY T3.doctor_id ORDER BY sum(T1.days_supply) DESC LIMIT 3"),
    Template(("Which patients from {city} had an appointment costing more than the average appointment?",),
             "SELECT DISTINCT T2.name FROM appointment AS T1 JOIN patient AS T2 ON T1.patient_id = T2.patient_id WHERE T2.city = '{city}' AND T1.total_cost > (SELECT avg(total_cost) FROM appointment)",
             "SELECT DISTINCT city FROM patient", 2),
    Template(("Which patients have seen a {s1} doctor but never a {s2} doctor?",),
             "SELECT T3.name FROM appointment AS T1 JOIN doctor AS T2 ON T1.doctor_id = T2.doctor_id JOIN patient AS T3 ON T1.patient_id = T3.patient_id WHERE T2.specialty = '{s1}' EXCEPT SELECT T3.name FROM appointment AS T1 JOIN doctor AS T2 ON T1.doctor_id = T2.doctor_id JOIN patient AS T3 ON T1.patient_id = T3.patient_id WHERE T2.specialty = '{s2}'",
             "SELECT DISTINCT A.specialty AS s1, B.specialty AS s2 FROM doctor AS A, doctor AS B WHERE A.specialty != B.specialty"),
    Template(("List the patients who had an urgent appointment or were born before {year}.",),
             "SELECT T2.name FROM appointment AS T1 JOIN patient AS T2 ON T1.patient_id = T2.patient_id WHERE T1.visit_type = 'urgent' UNION SELECT name FROM patient WHERE birth_year < {year}",
             choices("year", (1950, 1955, 1960))),
    Template(("Which three doctors have the highest average appointment cost? Give their names and average costs.",),
             "SELECT T2.name, avg(T1.total_cost) FROM appointment AS T1 JOIN doctor AS T2 ON T1.doctor_id = T2.doctor_id GROUP BY T1.doctor_id ORDER BY avg(T1.total_cost) DESC LIMIT 3"),
)

# --- database 3: bike_hire (train) ----------------------------------------------------------

BIKE_SCHEMA = """
CREATE TABLE station (
    station_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    district TEXT NOT NULL,
    dock_count INTEGER NOT NULL,
    opened_date TEXT NOT NULL
);
CREATE TABLE bike (
    bike_id INTEGER PRIMARY KEY,
    model TEXT NOT NULL,
    bike_type TEXT NOT NULL,
    home_station_id INTEGER NOT NULL,
    purchase_year INTEGER NOT NULL,
    hourly_rate REAL NOT NULL,
    FOREIGN KEY (home_station_id) REFERENCES station (station_id)
);
CREATE TABLE customer (
    customer_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    membership TEXT NOT NULL,
    signup_date TEXT NOT NULL,
    age INTEGER NOT NULL
);
CREATE TABLE rental (
    rental_id INTEGER PRIMARY KEY,
    bike_id INTEGER NOT NULL,
    customer_id INTEGER NOT NULL,
    start_station_id INTEGER NOT NULL,
    end_station_id INTEGER NOT NULL,
    rental_date TEXT NOT NULL,
    duration_minutes INTEGER NOT NULL,
    cost REAL NOT NULL,
    FOREIGN KEY (bike_id) REFERENCES bike (bike_id),
    FOREIGN KEY (customer_id) REFERENCES customer (customer_id),
    FOREIGN KEY (start_station_id) REFERENCES station (station_id),
    FOREIGN KEY (end_station_id) REFERENCES station (station_id)
);
"""


def bike_rows(rng: random.Random) -> dict[str, list[tuple]]:
    docks = rng.sample(range(8, 40), 12)
    stations = [
        (i + 1, STATION_NAMES[i], DISTRICTS[i % len(DISTRICTS)] if i < 8 else rng.choice(DISTRICTS), docks[i], random_date(rng, date(2016, 3, 1), date(2022, 9, 30)))
        for i in range(12)
    ]
    bikes = []
    for i in range(36):
        bike_type = rng.choices(tuple(BIKE_MODELS), weights=(5, 4, 3, 1))[0]
        models, rate = BIKE_MODELS[bike_type]
        bikes.append((i + 1, rng.choice(models), bike_type, rng.randint(1, 12), rng.randint(2017, 2024), rate))
    ages = rng.sample(range(17, 75), 40)
    customers = [
        (i + 1, name, rng.choice(MEMBERSHIPS), random_date(rng, date(2019, 1, 1), date(2024, 3, 31)), ages[i])
        for i, name in enumerate(person_names(rng, 40))
    ]
    rentals = []
    for i in range(60):
        bike = rng.choice(bikes)
        duration = rng.randint(8, 180)
        # customers 34-40 never rent and stations 11-12 are never a starting point
        rentals.append((i + 1, bike[0], rng.randint(1, 33), rng.randint(1, 10), rng.randint(1, 12),
                        random_date(rng, date(2024, 4, 1), date(2024, 9, 30)), duration, round(bike[5] * duration / 60, 2)))
    return {"station": stations, "bike": bikes, "customer": customers, "rental": rentals}


BIKE_TEMPLATES = (
    # easy
    Template(("How many stations does the bike hire scheme have?", "Count the stations."),
             "SELECT count(*) FROM station"),
    Template(("How many {bike_type} bikes are there?", "Count the bikes of type {bike_type}.", "What is the number of {bike_type} bikes in the fleet?"),
             "SELECT count(*) FROM bike WHERE bike_type = '{bike_type}'", "SELECT DISTINCT bike_type FROM bike", 3),
    Template(("What are the names of the stations in the {district} district?", "List the stations located in {district}."),
             "SELECT name FROM station WHERE district = '{district}'", "SELECT DISTINCT district FROM station", 2),
    Template(("What is the average duration of a rental in minutes?", "How long does a rental last on average, in minutes?"),
             "SELECT avg(duration_minutes) FROM rental"),
    Template(("How many docks are there across all stations in total?",),
             "SELECT sum(dock_count) FROM station"),
    Template(("Which customers hold a {membership} membership?",),
             "SELECT name FROM customer WHERE membership = '{membership}'", choices("membership", MEMBERSHIPS)),
    Template(("Which bike models does the fleet include? List each model once.",),
             "SELECT DISTINCT model FROM bike"),
    Template(("What is the longest rental duration in minutes?",),
             "SELECT max(duration_minutes) FROM rental"),
    Template(("List the station names ordered by number of docks, largest first.",),
             "SELECT name FROM station ORDER BY dock_count DESC"),
    Template(("How many rentals lasted more than {minutes} minutes?", "Count the rentals longer than {minutes} minutes."),
             "SELECT count(*) FROM rental WHERE duration_minutes > {minutes}", choices("minutes", (60, 90, 120)), 2),
    Template(("Give the names of customers younger than {age}.",),
             "SELECT name FROM customer WHERE age < {age}", choices("age", (22, 25, 28))),
    Template(("Which districts have at least {k} stations?",),
             "SELECT district FROM station GROUP BY district HAVING count(*) >= {k}", choices("k", (3, 4))),
    Template(("How many rentals started between {start} and {end}?",),
             "SELECT count(*) FROM rental WHERE rental_date BETWEEN '{start}' AND '{end}'",
             ({"start": "2024-05-01", "end": "2024-05-31"}, {"start": "2024-08-01", "end": "2024-08-15"})),
    Template(("What is the earliest purchase year of any bike?",),
             "SELECT min(purchase_year) FROM bike"),
    Template(("How many customers signed up after {date}?",),
             "SELECT count(*) FROM customer WHERE signup_date > '{date}'", "SELECT signup_date AS date FROM customer"),
    # medium
    Template(("Show the model and hourly rate of every {bike_type} bike.",),
             "SELECT model, hourly_rate FROM bike WHERE bike_type = '{bike_type}'", "SELECT DISTINCT bike_type FROM bike"),
    Template(("How many customers are there for each membership type?",),
             "SELECT membership, count(*) FROM customer GROUP BY membership"),
    Template(("What is the average hourly rate for each bike type?",),
             "SELECT bike_type, avg(hourly_rate) FROM bike GROUP BY bike_type"),
    Template(("Who is the oldest customer?", "Give the name of the customer with the highest age."),
             "SELECT name FROM customer ORDER BY age DESC LIMIT 1"),
    Template(("Which station has the largest number of docks?",),
             "SELECT name FROM station ORDER BY dock_count DESC LIMIT 1"),
    Template(("List the date and duration of each rental by {customer}.", "When did {customer} rent bikes, and for how many minutes each time?"),
             "SELECT T1.rental_date, T1.duration_minutes FROM rental AS T1 JOIN customer AS T2 ON T1.customer_id = T2.customer_id WHERE T2.name = '{customer}'",
             "SELECT DISTINCT T2.name AS customer FROM rental AS T1 JOIN customer AS T2 ON T1.customer_id = T2.customer_id", 2),
    Template(("How many bikes have {station} as their home station?", "Count the bikes based at the {station} station."),
             "SELECT count(*) FROM bike AS T1 JOIN station AS T2 ON T1.home_station_id = T2.station_id WHERE T2.name = '{station}'",
             "SELECT name AS station FROM station", 2),
    Template(("What are the cheapest and most expensive rental costs?",),
             "SELECT min(cost), max(cost) FROM rental"),
    Template(("What was the average rental cost in {month_name} 2024?",),
             "SELECT avg(cost) FROM rental WHERE rental_date LIKE '{month}%'",
             ({"month_name": "April", "month": "2024-04"}, {"month_name": "July", "month": "2024-07"}, {"month_name": "September", "month": "2024-09"}), 2),
    Template(("How many customers have either a monthly or an annual membership?",),
             "SELECT count(*) FROM customer WHERE membership = 'monthly' OR membership = 'annual'"),
    Template(("Which {membership} members are older than {age}?", "List the customers with a {membership} membership whose age is above {age}."),
             "SELECT name FROM customer WHERE membership = '{membership}' AND age > {age}", "SELECT membership, age - 1 AS age FROM customer", 2),
    Template(("How many bikes are based in each district?",),
             "SELECT T2.district, count(*) FROM bike AS T1 JOIN station AS T2 ON T1.home_station_id = T2.station_id GROUP BY T2.district"),
    Template(("What is the total rental revenue from each membership type?",),
             "SELECT T2.membership, sum(T1.cost) FROM rental AS T1 JOIN customer AS T2 ON T1.customer_id = T2.customer_id GROUP BY T2.membership"),
    Template(("Show the name and dock count of stations opened before {date}.",),
             "SELECT name, dock_count FROM station WHERE opened_date < '{date}'", "SELECT opened_date AS date FROM station"),
    Template(("How many different customers have started a rental at {station}?",),
             "SELECT count(DISTINCT T1.customer_id) FROM rental AS T1 JOIN station AS T2 ON T1.start_station_id = T2.station_id WHERE T2.name = '{station}'",
             "SELECT name AS station FROM station", 2),
    Template(("What is the average customer age for each membership type, rounded to one decimal place?",),
             "SELECT membership, round(avg(age), 1) FROM customer GROUP BY membership"),
    # hard
    Template(("Which bike models have an hourly rate above the average rate of all bikes?",),
             "SELECT DISTINCT model FROM bike WHERE hourly_rate > (SELECT avg(hourly_rate) FROM bike)"),
    Template(("At which stations has no rental ever started?",),
             "SELECT name FROM station WHERE station_id NOT IN (SELECT start_station_id FROM rental)"),
    Template(("Which customers have never rented a bike?", "List the customers without any rentals."),
             "SELECT name FROM customer WHERE customer_id NOT IN (SELECT customer_id FROM rental)"),
    Template(("Which membership type has the most customers?",),
             "SELECT membership FROM customer GROUP BY membership ORDER BY count(*) DESC LIMIT 1"),
    Template(("Which district has the most stations?",),
             "SELECT district FROM station GROUP BY district ORDER BY count(*) DESC LIMIT 1"),
    Template(("Which customers have rented a {bike_type} bike?", "Give the distinct names of customers who hired {bike_type} bikes."),
             "SELECT DISTINCT T3.name FROM rental AS T1 JOIN bike AS T2 ON T1.bike_id = T2.bike_id JOIN customer AS T3 ON T1.customer_id = T3.customer_id WHERE T2.bike_type = '{bike_type}'",
             "SELECT DISTINCT bike_type FROM bike", 2),
    Template(("List the dates of {customer}'s rentals in chronological order.", "When did {customer} rent a bike? Order the dates from earliest to latest."),
             "SELECT T1.rental_date FROM rental AS T1 JOIN customer AS T2 ON T1.customer_id = T2.customer_id WHERE T2.name = '{customer}' ORDER BY T1.rental_date",
             "SELECT T2.name AS customer FROM rental AS T1 JOIN customer AS T2 ON T1.customer_id = T2.customer_id GROUP BY T2.name HAVING count(*) >= 2", 2),
    Template(("Which bike types include bikes bought before {y1} as well as bikes bought after {y2}?",),
             "SELECT bike_type FROM bike WHERE purchase_year < {y1} INTERSECT SELECT bike_type FROM bike WHERE purchase_year > {y2}",
             ({"y1": 2019, "y2": 2022}, {"y1": 2020, "y2": 2023})),
    Template(("Which bike models have never been rented by a customer with a {membership} membership?",),
             "SELECT model FROM bike EXCEPT SELECT T1.model FROM bike AS T1 JOIN rental AS T2 ON T1.bike_id = T2.bike_id JOIN customer AS T3 ON T2.customer_id = T3.customer_id WHERE T3.membership = '{membership}'",
             choices("membership", MEMBERSHIPS)),
    Template(("What are the youngest and oldest ages among {membership} customers who signed up after {date}?",),
             "SELECT min(age), max(age) FROM customer WHERE membership = '{membership}' AND signup_date > '{date}'",
             "SELECT membership, signup_date AS date FROM customer"),
    Template(("How many rentals lasted longer than the average rental?",),
             "SELECT count(*) FROM rental WHERE duration_minutes > (SELECT avg(duration_minutes) FROM rental)"),
    Template(("Which stations have been the end of a rental but never the start of one?",),
             "SELECT T2.name FROM rental AS T1 JOIN station AS T2 ON T1.end_station_id = T2.station_id EXCEPT SELECT T2.name FROM rental AS T1 JOIN station AS T2 ON T1.start_station_id = T2.station_id"),
    Template(("For each district, what is the total cost of rentals that started there? Order from highest to lowest total.",),
             "SELECT T2.district, sum(T1.cost) FROM rental AS T1 JOIN station AS T2 ON T1.start_station_id = T2.station_id GROUP BY T2.district ORDER BY sum(T1.cost) DESC"),
    # extra
    Template(("Which customer has made the most rentals?",),
             "SELECT T2.name FROM rental AS T1 JOIN customer AS T2 ON T1.customer_id = T2.customer_id GROUP BY T1.customer_id ORDER BY count(*) DESC LIMIT 1"),
    Template(("From which station did the most rentals start?",),
             "SELECT T2.name FROM rental AS T1 JOIN station AS T2 ON T1.start_station_id = T2.station_id GROUP BY T1.start_station_id ORDER BY count(*) DESC LIMIT 1"),
    Template(("Which three bike types earned the most rental revenue, and how much did each earn?",),
             "SELECT T2.bike_type, sum(T1.cost) FROM rental AS T1 JOIN bike AS T2 ON T1.bike_id = T2.bike_id GROUP BY T2.bike_type ORDER BY sum(T1.cost) DESC LIMIT 3"),
    Template(("Which customers have rented both {t1} bikes and {t2} bikes?",),
             "SELECT T3.name FROM rental AS T1 JOIN bike AS T2 ON T1.bike_id = T2.bike_id JOIN customer AS T3 ON T1.customer_id = T3.customer_id WHERE T2.bike_type = '{t1}' INTERSECT SELECT T3.name FROM rental AS T1 JOIN bike AS T2 ON T1.bike_id = T2.bike_id JOIN customer AS T3 ON T1.customer_id = T3.customer_id WHERE T2.bike_type = '{t2}'",
             "SELECT DISTINCT A.bike_type AS t1, B.bike_type AS t2 FROM bike AS A, bike AS B WHERE A.bike_type < B.bike_type"),
    Template(("Which customers spend more per rental on average than the overall average rental cost?",),
             "SELECT T2.name FROM rental AS T1 JOIN customer AS T2 ON T1.customer_id = T2.customer_id GROUP BY T1.customer_id HAVING avg(T1.cost) > (SELECT avg(cost) FROM rental)"),
    Template(("Which {membership} members have made a rental longer than the average rental?",),
             "SELECT DISTINCT T2.name FROM rental AS T1 JOIN customer AS T2 ON T1.customer_id = T2.customer_id WHERE T2.membership = '{membership}' AND T1.duration_minutes > (SELECT avg(duration_minutes) FROM rental)",
             choices("membership", MEMBERSHIPS), 2),
    Template(("List the bike models based in the {district} district or bought in {year}.",),
             "SELECT T1.model FROM bike AS T1 JOIN station AS T2 ON T1.home_station_id = T2.station_id WHERE T2.district = '{district}' UNION SELECT model FROM bike WHERE purchase_year = {year}",
             "SELECT DISTINCT T2.district, T1.purchase_year AS year FROM bike AS T1 JOIN station AS T2 ON T1.home_station_id = T2.station_id"),
    Template(("Who made the most expensive rental of a {bike_type} bike, and what did it cost?",),
             "SELECT T3.name, T1.cost FROM rental AS T1 JOIN bike AS T2 ON T1.bike_id = T2.bike_id JOIN customer AS T3 ON T1.customer_id = T3.customer_id WHERE T2.bike_type = '{bike_type}' ORDER BY T1.cost DESC LIMIT 1",
             "SELECT DISTINCT bike_type FROM bike", 2),
)

# --- database 4: folk_festival (train) ------------------------------------------------------

FESTIVAL_SCHEMA = """
CREATE TABLE stage (
    stage_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    capacity INTEGER NOT NULL,
    is_covered INTEGER NOT NULL
);
CREATE TABLE artist (
    artist_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    genre TEXT NOT NULL,
    home_country TEXT NOT NULL,
    formed_year INTEGER NOT NULL,
    member_count INTEGER NOT NULL
);
CREATE TABLE performance (
    performance_id INTEGER PRIMARY KEY,
    artist_id INTEGER NOT NULL,
    stage_id INTEGER NOT NULL,
    performance_date TEXT NOT NULL,
    start_hour INTEGER NOT NULL,
    duration_minutes INTEGER NOT NULL,
    attendance INTEGER NOT NULL,
    FOREIGN KEY (artist_id) REFERENCES artist (artist_id),
    FOREIGN KEY (stage_id) REFERENCES stage (stage_id)
);
CREATE TABLE vendor (
    vendor_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    category TEXT NOT NULL,
    stage_id INTEGER NOT NULL,
    daily_fee REAL NOT NULL,
    FOREIGN KEY (stage_id) REFERENCES stage (stage_id)
);
"""


def festival_rows(rng: random.Random) -> dict[str, list[tuple]]:
    capacities = rng.sample(range(150, 5000, 50), 10)
    stages = [(i + 1, name, capacities[i], int("Tent" in name or "Barn" in name)) for i, name in enumerate(STAGE_NAMES)]
    band_names = rng.sample([f"The {adjective} {noun}" for adjective in BAND_ADJECTIVES for noun in BAND_NOUNS], 32)
    formed_years = rng.sample(range(1975, 2023), 32)
    artists = [
        (i + 1, band_names[i], rng.choice(MUSIC_GENRES), rng.choice(ARTIST_COUNTRIES), formed_years[i], rng.randint(1, 7))
        for i in range(32)
    ]
    performances = []
    for i in range(55):
        stage = rng.choice(stages)
        # artists 29-32 never perform, so "artists with no performance" has an answer
        performances.append((i + 1, rng.randint(1, 28), stage[0], rng.choice(FESTIVAL_DATES), rng.randint(11, 23),
                             rng.choice((30, 45, 60, 75, 90)), rng.randint(stage[2] // 4, stage[2])))
    vendor_names = rng.sample([(f"The {word} {thing}", category) for category, things in VENDOR_THINGS.items() for word in VENDOR_WORDS for thing in things], 20)
    vendors = [(i + 1, name, category, rng.randint(1, 10), float(rng.randrange(80, 400, 10))) for i, (name, category) in enumerate(vendor_names)]
    return {"stage": stages, "artist": artists, "performance": performances, "vendor": vendors}


FESTIVAL_TEMPLATES = (
    # easy
    Template(("How many artists are on the festival line-up?", "Count the artists."),
             "SELECT count(*) FROM artist"),
    Template(("How many {genre} artists are there?", "Count the artists who play {genre}.", "What is the number of artists in the {genre} genre?"),
             "SELECT count(*) FROM artist WHERE genre = '{genre}'", "SELECT DISTINCT genre FROM artist", 3),
    Template(("Which artists come from {country}?", "List the names of artists whose home country is {country}."),
             "SELECT name FROM artist WHERE home_country = '{country}'", "SELECT DISTINCT home_country AS country FROM artist", 2),
    Template(("What is the average attendance of a performance?",),
             "SELECT avg(attendance) FROM performance"),
    Template(("Which stages are covered?", "List the names of the covered stages."),
             "SELECT name FROM stage WHERE is_covered = 1"),
    Template(("What is the capacity of the largest stage?",),
             "SELECT max(capacity) FROM stage"),
    Template(("Which music genres are represented at the festival? List each once.",),
             "SELECT DISTINCT genre FROM artist"),
    Template(("How many performances were scheduled on {date}?", "Count the performances that took place on {date}."),
             "SELECT count(*) FROM performance WHERE performance_date = '{date}'", choices("date", FESTIVAL_DATES), 2),
    Template(("List the stage names from the largest capacity to the smallest.",),
             "SELECT name FROM stage ORDER BY capacity DESC"),
    Template(("What are the names of the {category} vendors?", "List the vendors in the {category} category."),
             "SELECT name FROM vendor WHERE category = '{category}'", "SELECT DISTINCT category FROM vendor", 2),
    Template(("Which genres have at least {k} artists?",),
             "SELECT genre FROM artist GROUP BY genre HAVING count(*) >= {k}", choices("k", (5, 6))),
    Template(("How many musicians in total play in {genre} acts?",),
             "SELECT sum(member_count) FROM artist WHERE genre = '{genre}'", "SELECT DISTINCT genre FROM artist"),
    Template(("How many performances start at {hour}:00 or later?",),
             "SELECT count(*) FROM performance WHERE start_hour >= {hour}", choices("hour", (18, 20, 21))),
    Template(("What is the average daily fee paid by vendors?",),
             "SELECT avg(daily_fee) FROM vendor"),
    Template(("How many vendors are there at the festival?",),
             "SELECT count(*) FROM vendor"),
    # medium
    Template(("Show the name and formation year of every {genre} artist.", "For {genre} artists, list each name with the year the act was formed."),
             "SELECT name, formed_year FROM artist WHERE genre = '{genre}'", "SELECT DISTINCT genre FROM artist", 2),
    Template(("How many artists play each genre?",),
             "SELECT genre, count(*) FROM artist GROUP BY genre"),
    Template(("Which stage has the largest capacity?",),
             "SELECT name FROM stage ORDER BY capacity DESC LIMIT 1"),
    Template(("Which artist was formed most recently?", "What is the name of the youngest act by formation year?"),
             "SELECT name FROM artist ORDER BY formed_year DESC LIMIT 1"),
    Template(("On which dates and at what hours did {artist} perform?",),
             "SELECT T1.performance_date, T1.start_hour FROM performance AS T1 JOIN artist AS T2 ON T1.artist_id = T2.artist_id WHERE T2.name = '{artist}'",
             "SELECT DISTINCT T2.name AS artist FROM performance AS T1 JOIN artist AS T2 ON T1.artist_id = T2.artist_id", 2),
    Template(("How many performances took place on the {stage}?", "Count the performances held on the stage called {stage}."),
             "SELECT count(*) FROM performance AS T1 JOIN stage AS T2 ON T1.stage_id = T2.stage_id WHERE T2.name = '{stage}'",
             "SELECT name AS stage FROM stage", 2),
    Template(("What were the lowest and highest attendances of any performance?",),
             "SELECT min(attendance), max(attendance) FROM performance"),
    Template(("What is the average attendance of the performances on each stage? Show stage names.",),
             "SELECT T2.name, avg(T1.attendance) FROM performance AS T1 JOIN stage AS T2 ON T1.stage_id = T2.stage_id GROUP BY T1.stage_id"),
    Template(("Which artists play {g1} or {g2}?",),
             "SELECT name FROM artist WHERE genre = '{g1}' OR genre = '{g2}'",
             "SELECT DISTINCT A.genre AS g1, B.genre AS g2 FROM artist AS A, artist AS B WHERE A.genre < B.genre"),
    Template(("Which {genre} artists have more than {size} members?",),
             "SELECT name FROM artist WHERE genre = '{genre}' AND member_count > {size}", "SELECT genre, member_count - 1 AS size FROM artist WHERE member_count > 1", 2),
    Template(("Which artists have the word {word} in their name?", "Find the artists whose name contains '{word}'."),
             "SELECT name FROM artist WHERE name LIKE '%{word}%'", choices("word", BAND_NOUNS + BAND_ADJECTIVES), 2),
    Template(("What is the average daily fee for each vendor category?",),
             "SELECT category, avg(daily_fee) FROM vendor GROUP BY category"),
    Template(("How many vendors are placed near each stage? Give stage names and counts.",),
             "SELECT T2.name, count(*) FROM vendor AS T1 JOIN stage AS T2 ON T1.stage_id = T2.stage_id GROUP BY T1.stage_id"),
    Template(("How many artists come from each country?",),
             "SELECT home_country, count(*) FROM artist GROUP BY home_country"),
    Template(("Show the name and capacity of the stages that are not covered.",),
             "SELECT name, capacity FROM stage WHERE is_covered = 0"),
    # hard
    Template(("Which stages hold more people than the average stage?",),
             "SELECT name FROM stage WHERE capacity > (SELECT avg(capacity) FROM stage)"),
    Template(("Which artists did not perform at all?", "List the artists without any performance."),
             "SELECT name FROM artist WHERE artist_id NOT IN (SELECT artist_id FROM performance)"),
    Template(("Which genre has the most artists?",),
             "SELECT genre FROM artist GROUP BY genre ORDER BY count(*) DESC LIMIT 1"),
    Template(("On which stages did {artist} play?", "List the distinct stages where {artist} performed."),
             "SELECT DISTINCT T3.name FROM performance AS T1 JOIN artist AS T2 ON T1.artist_id = T2.artist_id JOIN stage AS T3 ON T1.stage_id = T3.stage_id WHERE T2.name = '{artist}'",
             "SELECT DISTINCT T2.name AS artist FROM performance AS T1 JOIN artist AS T2 ON T1.artist_id = T2.artist_id", 2),
    Template(("List the artists who performed on {date}, from the largest audience to the smallest.",),
             "SELECT T2.name FROM performance AS T1 JOIN artist AS T2 ON T1.artist_id = T2.artist_id WHERE T1.performance_date = '{date}' ORDER BY T1.attendance DESC",
             choices("date", FESTIVAL_DATES)),
    Template(("Which countries have both {g1} and {g2} artists?",),
             "SELECT home_country FROM artist WHERE genre = '{g1}' INTERSECT SELECT home_country FROM artist WHERE genre = '{g2}'",
             "SELECT DISTINCT A.genre AS g1, B.genre AS g2 FROM artist AS A, artist AS B WHERE A.genre < B.genre"),
    Template(("Which genres have no artist from {country}?",),
             "SELECT genre FROM artist EXCEPT SELECT genre FROM artist WHERE home_country = '{country}'",
             "SELECT DISTINCT home_country AS country FROM artist"),
    Template(("Which vendor pays the highest daily fee?",),
             "SELECT name FROM vendor WHERE daily_fee = (SELECT max(daily_fee) FROM vendor)"),
    Template(("For performances starting at {hour}:00 or later and lasting at least an hour, give their number and average attendance.",),
             "SELECT count(*), avg(attendance) FROM performance WHERE start_hour >= {hour} AND duration_minutes >= 60", choices("hour", (18, 20))),
    Template(("What is the total attendance for each genre, from the highest total to the lowest?",),
             "SELECT T2.genre, sum(T1.attendance) FROM performance AS T1 JOIN artist AS T2 ON T1.artist_id = T2.artist_id GROUP BY T2.genre ORDER BY sum(T1.attendance) DESC"),
    Template(("Which stages have a {category} vendor nearby?",),
             "SELECT name FROM stage WHERE stage_id IN (SELECT stage_id FROM vendor WHERE category = '{category}')",
             "SELECT DISTINCT category FROM vendor", 2),
    # extra
    Template(("Which artist performed the most times?",),
             "SELECT T2.name FROM performance AS T1 JOIN artist AS T2 ON T1.artist_id = T2.artist_id GROUP BY T1.artist_id ORDER BY count(*) DESC LIMIT 1"),
    Template(("Which stage had the highest total attendance?",),
             "SELECT T2.name FROM performance AS T1 JOIN stage AS T2 ON T1.stage_id = T2.stage_id GROUP BY T1.stage_id ORDER BY sum(T1.attendance) DESC LIMIT 1"),
    Template(("Which artists performed on both the {stage1} and the {stage2}?",),
             "SELECT T2.name FROM performance AS T1 JOIN artist AS T2 ON T1.artist_id = T2.artist_id JOIN stage AS T3 ON T1.stage_id = T3.stage_id WHERE T3.name = '{stage1}' INTERSECT SELECT T2.name FROM performance AS T1 JOIN artist AS T2 ON T1.artist_id = T2.artist_id JOIN stage AS T3 ON T1.stage_id = T3.stage_id WHERE T3.name = '{stage2}'",
             "SELECT DISTINCT A.name AS stage1, B.name AS stage2 FROM stage AS A, stage AS B WHERE A.name < B.name"),
    Template(("Which {genre} artists drew a crowd larger than the average performance attendance?",),
             "SELECT DISTINCT T2.name FROM performance AS T1 JOIN artist AS T2 ON T1.artist_id = T2.artist_id WHERE T2.genre = '{genre}' AND T1.attendance > (SELECT avg(attendance) FROM performance)",
             "SELECT DISTINCT genre FROM artist", 2),
    Template(("Which three artists had the largest total attendance, and what was each total?",),
             "SELECT T2.name, sum(T1.attendance) FROM performance AS T1 JOIN artist AS T2 ON T1.artist_id = T2.artist_id GROUP BY T1.artist_id ORDER BY sum(T1.attendance) DESC LIMIT 3"),
    Template(("Which genres were played on the {stage1} but never on the {stage2}?",),
             "SELECT T2.genre FROM performance AS T1 JOIN artist AS T2 ON T1.artist_id = T2.artist_id JOIN stage AS T3 ON T1.stage_id = T3.stage_id WHERE T3.name = '{stage1}' EXCEPT SELECT T2.genre FROM performance AS T1 JOIN artist AS T2 ON T1.artist_id = T2.artist_id JOIN stage AS T3 ON T1.stage_id = T3.stage_id WHERE T3.name = '{stage2}'",
             "SELECT DISTINCT A.name AS stage1, B.name AS stage2 FROM stage AS A, stage AS B WHERE A.name != B.name"),
    Template(("List the artists who played the {stage} or who come from {country}.",),
             "SELECT T2.name FROM performance AS T1 JOIN artist AS T2 ON T1.artist_id = T2.artist_id JOIN stage AS T3 ON T1.stage_id = T3.stage_id WHERE T3.name = '{stage}' UNION SELECT name FROM artist WHERE home_country = '{country}'",
             "SELECT DISTINCT T3.name AS stage, T2.home_country AS country FROM performance AS T1 JOIN artist AS T2 ON T1.artist_id = T2.artist_id JOIN stage AS T3 ON T1.stage_id = T3.stage_id"),
)

# --- database 5: hill_school (dev) ----------------------------------------------------------

SCHOOL_SCHEMA = """
CREATE TABLE teacher (
    teacher_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    subject TEXT NOT NULL,
    hire_year INTEGER NOT NULL,
    salary INTEGER NOT NULL
);
CREATE TABLE course (
    course_id INTEGER PRIMARY KEY,
    title TEXT NOT NULL,
    teacher_id INTEGER NOT NULL,
    room TEXT NOT NULL,
    grade_level INTEGER NOT NULL,
    credit_hours INTEGER NOT NULL,
    FOREIGN KEY (teacher_id) REFERENCES teacher (teacher_id)
);
CREATE TABLE student (
    student_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    grade_level INTEGER NOT NULL,
    birth_date TEXT NOT NULL,
    house TEXT NOT NULL
);
CREATE TABLE enrollment (
    enrollment_id INTEGER PRIMARY KEY,
    student_id INTEGER NOT NULL,
    course_id INTEGER NOT NULL,
    term TEXT NOT NULL,
    final_score REAL NOT NULL,
    FOREIGN KEY (student_id) REFERENCES student (student_id),
    FOREIGN KEY (course_id) REFERENCES course (course_id)
);
"""


def school_rows(rng: random.Random) -> dict[str, list[tuple]]:
    names = person_names(rng, 14 + 50)
    subjects = list(SUBJECT_COURSES)
    hire_years = rng.sample(range(1998, 2024), 14)
    salaries = rng.sample(range(41000, 78000, 500), 14)
    teachers = [(i + 1, names[i], subjects[i % len(subjects)], hire_years[i], salaries[i]) for i in range(14)]
    course_titles = [(title, subject) for subject, titles in SUBJECT_COURSES.items() for title in titles]
    rooms = [f"{block}{number}" for block in "ABC" for number in (101, 102, 201, 202)]
    courses = []
    for i, (title, subject) in enumerate(course_titles):
        teacher = rng.choice([t for t in teachers if t[2] == subject])
        courses.append((i + 1, title, teacher[0], rng.choice(rooms), rng.randint(9, 12), rng.randint(1, 4)))
    students = []
    for i in range(50):
        grade = rng.randint(9, 12)
        birth = random_date(rng, date(2024 - grade - 6, 9, 1), date(2025 - grade - 6, 8, 31))
        students.append((i + 1, names[14 + i], grade, birth, rng.choice(HOUSES)))
    # students 45-50 take no course and the last two courses have no enrollment
    enrollments = [
        (i + 1, rng.randint(1, 44), rng.randint(1, len(courses) - 2), rng.choice(TERMS), round(rng.uniform(42, 99), 1))
        for i in range(60)
    ]
    return {"teacher": teachers, "course": courses, "student": students, "enrollment": enrollments}


SCHOOL_TEMPLATES = (
    # easy
    Template(("How many students attend the school?", "Count the students."),
             "SELECT count(*) FROM student"),
    Template(("How many students belong to {house} house?", "Count the students in the {house} house."),
             "SELECT count(*) FROM student WHERE house = '{house}'", choices("house", HOUSES), 2),
    Template(("Which teachers teach {subject}?", "List the names of teachers whose subject is {subject}."),
             "SELECT name FROM teacher WHERE subject = '{subject}'", "SELECT DISTINCT subject FROM teacher", 2),
    Template(("What is the average final score across all enrollments?",),
             "SELECT avg(final_score) FROM enrollment"),
    Template(("List the titles of courses offered to grade {grade}.", "Which courses are for grade level {grade}?"),
             "SELECT title FROM course WHERE grade_level = {grade}", choices("grade", (9, 10, 11, 12)), 2),
    Template(("What are the names of the school houses? List each once.",),
             "SELECT DISTINCT house FROM student"),
    Template(("What is the highest teacher salary?",),
             "SELECT max(salary) FROM teacher"),
    Template(("How many enrollments are there in the {term} term?",),
             "SELECT count(*) FROM enrollment WHERE term = '{term}'", choices("term", TERMS)),
    Template(("List the teachers' names ordered by the year they were hired, earliest first.",),
             "SELECT name FROM teacher ORDER BY hire_year"),
    Template(("Which students were born after {date}?",),
             "SELECT name FROM student WHERE birth_date > '{date}'", "SELECT birth_date AS date FROM student ORDER BY birth_date DESC LIMIT 12"),
    Template(("Which houses have at least {k} students?",),
             "SELECT house FROM student GROUP BY house HAVING count(*) >= {k}", choices("k", (10, 11))),
    Template(("How many courses carry at least {hours} credit hours?",),
             "SELECT count(*) FROM course WHERE credit_hours >= {hours}", choices("hours", (2, 3))),
    Template(("What is the total number of credit hours over all courses?",),
             "SELECT sum(credit_hours) FROM course"),
    Template(("What is the average salary of teachers hired before {year}?",),
             "SELECT avg(salary) FROM teacher WHERE hire_year < {year}", choices("year", (2005, 2010, 2015))),
    Template(("How many different rooms are used for courses?",),
             "SELECT count(DISTINCT room) FROM course"),
    Template(("What is the lowest final score recorded?",),
             "SELECT min(final_score) FROM enrollment"),
    Template(("List the names of the students in grade {grade}.",),
             "SELECT name FROM student WHERE grade_level = {grade}", choices("grade", (9, 10, 11, 12))),
    # medium
    Template(("Show the name and salary of each {subject} teacher.",),
             "SELECT name, salary FROM teacher WHERE subject = '{subject}'", "SELECT DISTINCT subject FROM teacher"),
    Template(("How many students are in each house?",),
             "SELECT house, count(*) FROM student GROUP BY house"),
    Template(("Which teacher earns the highest salary?", "Who is the best paid teacher?"),
             "SELECT name FROM teacher ORDER BY salary DESC LIMIT 1"),
    Template(("Who is the youngest student?",),
             "SELECT name FROM student ORDER BY birth_date DESC LIMIT 1"),
    Template(("Which courses does {teacher} teach?", "List the course titles taught by {teacher}."),
             "SELECT T1.title FROM course AS T1 JOIN teacher AS T2 ON T1.teacher_id = T2.teacher_id WHERE T2.name = '{teacher}'",
             "SELECT name AS teacher FROM teacher", 2),
    Template(("How many courses is {student} enrolled in?", "Count the enrollments of the student {student}."),
             "SELECT count(*) FROM enrollment AS T1 JOIN student AS T2 ON T1.student_id = T2.student_id WHERE T2.name = '{student}'",
             "SELECT DISTINCT T2.name AS student FROM enrollment AS T1 JOIN student AS T2 ON T1.student_id = T2.student_id", 2),
    Template(("What are the lowest and highest final scores?",),
             "SELECT min(final_score), max(final_score) FROM enrollment"),
    Template(("What is the average final score in each term?",),
             "SELECT term, avg(final_score) FROM enrollment GROUP BY term"),
    Template(("How many students are in {h1} or {h2} house?",),
             "SELECT count(*) FROM student WHERE house = '{h1}' OR house = '{h2}'",
             "SELECT DISTINCT A.house AS h1, B.house AS h2 FROM student AS A, student AS B WHERE A.house < B.house"),
    Template(("Which grade {grade} students are in {house} house?", "List the students of grade {grade} who belong to the {house} house."),
             "SELECT name FROM student WHERE grade_level = {grade} AND house = '{house}'", "SELECT grade_level AS grade, house FROM student", 2),
    Template(("Which course titles contain the word {word}?",),
             "SELECT title FROM course WHERE title LIKE '%{word}%'", choices("word", ("History", "Chemistry", "Geography", "Music", "Biology")), 2),
    Template(("What is the average teacher salary for each subject?",),
             "SELECT subject, avg(salary) FROM teacher GROUP BY subject"),
    Template(("How many courses are taught in each subject?",),
             "SELECT T2.subject, count(*) FROM course AS T1 JOIN teacher AS T2 ON T1.teacher_id = T2.teacher_id GROUP BY T2.subject"),
    Template(("How many different students have taken {course}?",),
             "SELECT count(DISTINCT T1.student_id) FROM enrollment AS T1 JOIN course AS T2 ON T1.course_id = T2.course_id WHERE T2.title = '{course}'",
             "SELECT DISTINCT T2.title AS course FROM enrollment AS T1 JOIN course AS T2 ON T1.course_id = T2.course_id", 2),
    Template(("Show the name and birth date of the students in {house} house.",),
             "SELECT name, birth_date FROM student WHERE house = '{house}'", choices("house", HOUSES)),
    Template(("For each course title, what is the average final score rounded to one decimal place?",),
             "SELECT T2.title, round(avg(T1.final_score), 1) FROM enrollment AS T1 JOIN course AS T2 ON T1.course_id = T2.course_id GROUP BY T1.course_id"),
    # hard
    Template(("Which teachers earn more than the average teacher salary?",),
             "SELECT name FROM teacher WHERE salary > (SELECT avg(salary) FROM teacher)"),
    Template(("Which students are not enrolled in any course?",),
             "SELECT name FROM student WHERE student_id NOT IN (SELECT student_id FROM enrollment)"),
    Template(("Which house has the most students?",),
             "SELECT house FROM student GROUP BY house ORDER BY count(*) DESC LIMIT 1"),
    Template(("Which students have taken {course}?", "List the names of the students enrolled in {course}."),
             "SELECT T3.name FROM course AS T1 JOIN enrollment AS T2 ON T1.course_id = T2.course_id JOIN student AS T3 ON T2.student_id = T3.student_id WHERE T1.title = '{course}'",
             "SELECT DISTINCT T2.title AS course FROM enrollment AS T1 JOIN course AS T2 ON T1.course_id = T2.course_id", 2),
    Template(("Which teachers teach grade {grade} courses? Order them by salary, highest first.",),
             "SELECT DISTINCT T2.name FROM course AS T1 JOIN teacher AS T2 ON T1.teacher_id = T2.teacher_id WHERE T1.grade_level = {grade} ORDER BY T2.salary DESC",
             choices("grade", (9, 10, 11, 12)), 2),
    Template(("Which houses have students in both grade {g1} and grade {g2}?",),
             "SELECT house FROM student WHERE grade_level = {g1} INTERSECT SELECT house FROM student WHERE grade_level = {g2}",
             ({"g1": 9, "g2": 12}, {"g1": 10, "g2": 11})),
    Template(("Which subjects have no course for grade {grade}?",),
             "SELECT subject FROM teacher EXCEPT SELECT T2.subject FROM course AS T1 JOIN teacher AS T2 ON T1.teacher_id = T2.teacher_id WHERE T1.grade_level = {grade}",
             choices("grade", (9, 10, 11, 12))),
    Template(("Which teachers teach a course worth {hours} credit hours?",),
             "SELECT name FROM teacher WHERE teacher_id IN (SELECT teacher_id FROM course WHERE credit_hours = {hours})", choices("hours", (2, 4))),
    Template(("In the {term} term, how many enrollments have a score of at least 60, and what is their average score?",),
             "SELECT count(*), avg(final_score) FROM enrollment WHERE term = '{term}' AND final_score >= 60", choices("term", TERMS)),
    Template(("What is the average final score for each course grade level, from the highest average to the lowest?",),
             "SELECT T2.grade_level, avg(T1.final_score) FROM enrollment AS T1 JOIN course AS T2 ON T1.course_id = T2.course_id GROUP BY T2.grade_level ORDER BY avg(T1.final_score) DESC"),
    # extra
    Template(("Which student has the highest average final score?", "Who is the student with the best average score over their courses?"),
             "SELECT T2.name FROM enrollment AS T1 JOIN student AS T2 ON T1.student_id = T2.student_id GROUP BY T1.student_id ORDER BY avg(T1.final_score) DESC LIMIT 1"),
    Template(("Which teacher has the most enrollments across their courses?",),
             "SELECT T3.name FROM enrollment AS T1 JOIN course AS T2 ON T1.course_id = T2.course_id JOIN teacher AS T3 ON T2.teacher_id = T3.teacher_id GROUP BY T3.teacher_id ORDER BY count(*) DESC LIMIT 1"),
    Template(("List the courses {student} took with the final score in each, best score first.",),
             "SELECT T2.title, T1.final_score FROM enrollment AS T1 JOIN course AS T2 ON T1.course_id = T2.course_id JOIN student AS T3 ON T1.student_id = T3.student_id WHERE T3.name = '{student}' ORDER BY T1.final_score DESC",
             "SELECT T2.name AS student FROM enrollment AS T1 JOIN student AS T2 ON T1.student_id = T2.student_id GROUP BY T2.name HAVING count(*) >= 2", 2),
    Template(("Which courses have an average final score above the average over all enrollments?",),
             "SELECT T2.title FROM enrollment AS T1 JOIN course AS T2 ON T1.course_id = T2.course_id GROUP BY T1.course_id HAVING avg(T1.final_score) > (SELECT avg(final_score) FROM enrollment)"),
    Template(("Which students took both a {s1} course and a {s2} course?",),
             "SELECT T3.name FROM course AS T1 JOIN enrollment AS T2 ON T1.course_id = T2.course_id JOIN student AS T3 ON T2.student_id = T3.student_id JOIN teacher AS T4 ON T1.teacher_id = T4.teacher_id WHERE T4.subject = '{s1}' INTERSECT SELECT T3.name FROM course AS T1 JOIN enrollment AS T2 ON T1.course_id = T2.course_id JOIN student AS T3 ON T2.student_id = T3.student_id JOIN teacher AS T4 ON T1.teacher_id = T4.teacher_id WHERE T4.subject = '{s2}'",
             "SELECT DISTINCT A.subject AS s1, B.subject AS s2 FROM teacher AS A, teacher AS B WHERE A.subject < B.subject"),
    Template(("Which {house} house students scored above the average final score in some course?",),
             "SELECT DISTINCT T2.name FROM enrollment AS T1 JOIN student AS T2 ON T1.student_id = T2.student_id WHERE T2.house = '{house}' AND T1.final_score > (SELECT avg(final_score) FROM enrollment)",
             choices("house", HOUSES), 2),
    Template(("Which students either scored above {score} in a course or are in grade {grade}?",),
             "SELECT T2.name FROM enrollment AS T1 JOIN student AS T2 ON T1.student_id = T2.student_id WHERE T1.final_score > {score} UNION SELECT name FROM student WHERE grade_level = {grade}",
             ({"score": 95, "grade": 12}, {"score": 90, "grade": 9})),
)

# --- database 6: coastal_freight (dev) ------------------------------------------------------

FREIGHT_SCHEMA = """
CREATE TABLE port (
    port_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    country TEXT NOT NULL,
    berth_count INTEGER NOT NULL,
    max_draft_m REAL NOT NULL
);
CREATE TABLE vessel (
    vessel_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    vessel_type TEXT NOT NULL,
    capacity_tonnes INTEGER NOT NULL,
    built_year INTEGER NOT NULL,
    home_port_id INTEGER NOT NULL,
    FOREIGN KEY (home_port_id) REFERENCES port (port_id)
);
CREATE TABLE voyage (
    voyage_id INTEGER PRIMARY KEY,
    vessel_id INTEGER NOT NULL,
    origin_port_id INTEGER NOT NULL,
    destination_port_id INTEGER NOT NULL,
    departure_date TEXT NOT NULL,
    arrival_date TEXT NOT NULL,
    distance_nm INTEGER NOT NULL,
    FOREIGN KEY (vessel_id) REFERENCES vessel (vessel_id),
    FOREIGN KEY (origin_port_id) REFERENCES port (port_id),
    FOREIGN KEY (destination_port_id) REFERENCES port (port_id)
);
CREATE TABLE cargo (
    cargo_id INTEGER PRIMARY KEY,
    voyage_id INTEGER NOT NULL,
    commodity TEXT NOT NULL,
    weight_tonnes REAL NOT NULL,
    declared_value REAL NOT NULL,
    is_hazardous INTEGER NOT NULL,
    FOREIGN KEY (voyage_id) REFERENCES voyage (voyage_id)
);
"""


def freight_rows(rng: random.Random) -> dict[str, list[tuple]]:
    berths = rng.sample(range(4, 40), 12)
    ports = [
        (i + 1, name, PORT_COUNTRIES[i % len(PORT_COUNTRIES)] if i < 6 else rng.choice(PORT_COUNTRIES), berths[i], round(rng.uniform(8.0, 18.0), 1))
        for i, name in enumerate(PORT_NAMES)
    ]
    vessel_names = rng.sample([f"{adjective} {noun}" for adjective in VESSEL_ADJECTIVES for noun in VESSEL_NOUNS], 22)
    capacities = rng.sample(range(2000, 60000, 500), 22)
    built_years = rng.sample(range(1995, 2023), 22)
    vessels = [
        (i + 1, vessel_names[i], VESSEL_TYPES[i % len(VESSEL_TYPES)] if i < 8 else rng.choice(VESSEL_TYPES), capacities[i], built_years[i], rng.randint(1, 12))
        for i in range(22)
    ]
    voyages = []
    distances = rng.sample(range(120, 2400), 50)
    for i in range(50):
        origin, destination = rng.sample(range(1, 13), 2)
        departure = random_date(rng, date(2024, 1, 3), date(2024, 12, 15))
        # vessels 20-22 stay in port all year
        voyages.append((i + 1, rng.randint(1, 19), origin, destination, departure, shift_date(departure, 1 + distances[i] // 300), distances[i]))
    cargo = []
    for i in range(60):
        commodity = rng.choice(tuple(COMMODITIES))
        price, hazardous = COMMODITIES[commodity]
        weight = round(rng.uniform(50, 4000), 1)
        cargo.append((i + 1, rng.randint(1, 46), commodity, weight, round(weight * price * rng.uniform(0.9, 1.1), 2), hazardous))
    return {"port": ports, "vessel": vessels, "voyage": voyages, "cargo": cargo}


FREIGHT_TEMPLATES = (
    # easy
    Template(("How many vessels does the company operate?", "Count the vessels."),
             "SELECT count(*) FROM vessel"),
    Template(("How many {vessel_type} vessels are there?", "Count the vessels of type {vessel_type}."),
             "SELECT count(*) FROM vessel WHERE vessel_type = '{vessel_type}'", choices("vessel_type", VESSEL_TYPES), 2),
    Template(("Which ports are in {country}?", "List the names of the ports located in {country}."),
             "SELECT name FROM port WHERE country = '{country}'", "SELECT DISTINCT country FROM port", 2),
    Template(("What is the average distance of a voyage in nautical miles?",),
             "SELECT avg(distance_nm) FROM voyage"),
    Template(("What is the total weight in tonnes of all hazardous cargo?",),
             "SELECT sum(weight_tonnes) FROM cargo WHERE is_hazardous = 1"),
    Template(("Which commodities have been shipped? List each once.",),
             "SELECT DISTINCT commodity FROM cargo"),
    Template(("What is the largest capacity in tonnes of any vessel?",),
             "SELECT max(capacity_tonnes) FROM vessel"),
    Template(("How many voyages departed after {date}?",),
             "SELECT count(*) FROM voyage WHERE departure_date > '{date}'", "SELECT departure_date AS date FROM voyage"),
    Template(("List the port names ordered by number of berths, most first.",),
             "SELECT name FROM port ORDER BY berth_count DESC"),
    Template(("Which vessels were built before {year}?",),
             "SELECT name FROM vessel WHERE built_year < {year}", choices("year", (2000, 2005))),
    Template(("Which countries have at least {k} ports?",),
             "SELECT country FROM port GROUP BY country HAVING count(*) >= {k}", choices("k", (2, 3))),
    Template(("How many {commodity} cargo items have been shipped?", "Count the cargo items whose commodity is {commodity}."),
             "SELECT count(*) FROM cargo WHERE commodity = '{commodity}'", "SELECT DISTINCT commodity FROM cargo", 2),
    Template(("What is the average declared value of {commodity} cargo?",),
             "SELECT avg(declared_value) FROM cargo WHERE commodity = '{commodity}'", "SELECT DISTINCT commodity FROM cargo"),
    Template(("What is the smallest maximum draft of any port, in metres?",),
             "SELECT min(max_draft_m) FROM port"),
    Template(("How many different countries have ports in the network?",),
             "SELECT count(DISTINCT country) FROM port"),
    Template(("How many voyages were longer than {distance} nautical miles?",),
             "SELECT count(*) FROM voyage WHERE distance_nm > {distance}", choices("distance", (1000, 1500, 2000))),
    # medium
    Template(("Show the name and capacity of every {vessel_type} vessel.", "For {vessel_type} vessels, list each name with its capacity in tonnes."),
             "SELECT name, capacity_tonnes FROM vessel WHERE vessel_type = '{vessel_type}'", choices("vessel_type", VESSEL_TYPES), 2),
    Template(("How many vessels are there of each type?",),
             "SELECT vessel_type, count(*) FROM vessel GROUP BY vessel_type"),
    Template(("Which vessel has the largest capacity?",),
             "SELECT name FROM vessel ORDER BY capacity_tonnes DESC LIMIT 1"),
    Template(("What is the name of the oldest vessel?", "Which vessel was built first?"),
             "SELECT name FROM vessel ORDER BY built_year LIMIT 1"),
    Template(("Which vessels have {port} as their home port?", "List the vessels based at {port}."),
             "SELECT T1.name FROM vessel AS T1 JOIN port AS T2 ON T1.home_port_id = T2.port_id WHERE T2.name = '{port}'",
             "SELECT DISTINCT T2.name AS port FROM vessel AS T1 JOIN port AS T2 ON T1.home_port_id = T2.port_id", 2),
    Template(("How many voyages has the {vessel} made?", "Count the voyages of the vessel {vessel}."),
             "SELECT count(*) FROM voyage AS T1 JOIN vessel AS T2 ON T1.vessel_id = T2.vessel_id WHERE T2.name = '{vessel}'",
             "SELECT DISTINCT T2.name AS vessel FROM voyage AS T1 JOIN vessel AS T2 ON T1.vessel_id = T2.vessel_id", 2),
    Template(("What are the lightest and heaviest cargo weights?",),
             "SELECT min(weight_tonnes), max(weight_tonnes) FROM cargo"),
    Template(("What is the total weight shipped of each commodity?",),
             "SELECT commodity, sum(weight_tonnes) FROM cargo GROUP BY commodity"),
    Template(("Which vessels are of type {t1} or {t2}?",),
             "SELECT name FROM vessel WHERE vessel_type = '{t1}' OR vessel_type = '{t2}'",
             "SELECT DISTINCT A.vessel_type AS t1, B.vessel_type AS t2 FROM vessel AS A, vessel AS B WHERE A.vessel_type < B.vessel_type"),
    Template(("How many {commodity} cargo items weigh more than {weight} tonnes?",),
             "SELECT count(*) FROM cargo WHERE commodity = '{commodity}' AND weight_tonnes > {weight}",
             "SELECT commodity, CAST(weight_tonnes AS INTEGER) - 1 AS weight FROM cargo", 2),
    Template(("Which ports have {word} in their name?",),
             "SELECT name FROM port WHERE name LIKE '%{word}%'", choices("word", ("Bay", "Quay", "Cove", "Point", "Harbour", "Port"))),
    Template(("Which vessels have a name starting with {word}?",),
             "SELECT name FROM vessel WHERE name LIKE '{word}%'", choices("word", VESSEL_ADJECTIVES)),
    Template(("How many voyages departed from each port? Give port names and counts.",),
             "SELECT T2.name, count(*) FROM voyage AS T1 JOIN port AS T2 ON T1.origin_port_id = T2.port_id GROUP BY T1.origin_port_id"),
    Template(("What is the average capacity of each type of vessel, rounded to the nearest tonne?",),
             "SELECT vessel_type, round(avg(capacity_tonnes)) FROM vessel GROUP BY vessel_type"),
    Template(("List the departure date and distance of each voyage made by the {vessel}.",),
             "SELECT T1.departure_date, T1.distance_nm FROM voyage AS T1 JOIN vessel AS T2 ON T1.vessel_id = T2.vessel_id WHERE T2.name = '{vessel}'",
             "SELECT DISTINCT T2.name AS vessel FROM voyage AS T1 JOIN vessel AS T2 ON T1.vessel_id = T2.vessel_id"),
    Template(("Show the name and number of berths of the ports in {country}.",),
             "SELECT name, berth_count FROM port WHERE country = '{country}'", "SELECT DISTINCT country FROM port"),
    # hard
    Template(("Which vessels have a capacity above the average vessel capacity?",),
             "SELECT name FROM vessel WHERE capacity_tonnes > (SELECT avg(capacity_tonnes) FROM vessel)"),
    Template(("Which vessels have not made any voyage?",),
             "SELECT name FROM vessel WHERE vessel_id NOT IN (SELECT vessel_id FROM voyage)"),
    Template(("Which commodity appears in the most cargo items?",),
             "SELECT commodity FROM cargo GROUP BY commodity ORDER BY count(*) DESC LIMIT 1"),
    Template(("Which commodities has the {vessel} carried?", "List the distinct commodities carried on voyages of the {vessel}."),
             "SELECT DISTINCT T3.commodity FROM vessel AS T1 JOIN voyage AS T2 ON T1.vessel_id = T2.vessel_id JOIN cargo AS T3 ON T2.voyage_id = T3.voyage_id WHERE T1.name = '{vessel}'",
             "SELECT DISTINCT T1.name AS vessel FROM vessel AS T1 JOIN voyage AS T2 ON T1.vessel_id = T2.vessel_id JOIN cargo AS T3 ON T2.voyage_id = T3.voyage_id", 2),
    Template(("List the departure dates of voyages leaving {port}, in chronological order.",),
             "SELECT T1.departure_date FROM voyage AS T1 JOIN port AS T2 ON T1.origin_port_id = T2.port_id WHERE T2.name = '{port}' ORDER BY T1.departure_date",
             "SELECT T2.name AS port FROM voyage AS T1 JOIN port AS T2 ON T1.origin_port_id = T2.port_id GROUP BY T2.name HAVING count(*) >= 2", 2),
    Template(("Which vessel types include vessels built before {y1} as well as vessels built after {y2}?",),
             "SELECT vessel_type FROM vessel WHERE built_year < {y1} INTERSECT SELECT vessel_type FROM vessel WHERE built_year > {y2}",
             ({"y1": 2005, "y2": 2015}, {"y1": 2002, "y2": 2018})),
    Template(("Which commodities are never hazardous?",),
             "SELECT commodity FROM cargo EXCEPT SELECT commodity FROM cargo WHERE is_hazardous = 1"),
    Template(("Which ports are the destination of a voyage longer than {distance} nautical miles?",),
             "SELECT name FROM port WHERE port_id IN (SELECT destination_port_id FROM voyage WHERE distance_nm > {distance})", choices("distance", (1800, 2100))),
    Template(("How many non-hazardous {commodity} cargo items are there, and what is their total weight?",),
             "SELECT count(*), sum(weight_tonnes) FROM cargo WHERE commodity = '{commodity}' AND is_hazardous = 0", "SELECT DISTINCT commodity FROM cargo"),
    Template(("What is the total voyage distance for each vessel type, from the largest total to the smallest?",),
             "SELECT T2.vessel_type, sum(T1.distance_nm) FROM voyage AS T1 JOIN vessel AS T2 ON T1.vessel_id = T2.vessel_id GROUP BY T2.vessel_type ORDER BY sum(T1.distance_nm) DESC"),
    Template(("Which three commodities have the highest total declared value, and what is each total?",),
             "SELECT commodity, sum(declared_value) FROM cargo GROUP BY commodity ORDER BY sum(declared_value) DESC LIMIT 3"),
    # extra
    Template(("Which vessel has made the most voyages?",),
             "SELECT T2.name FROM voyage AS T1 JOIN vessel AS T2 ON T1.vessel_id = T2.vessel_id GROUP BY T1.vessel_id ORDER BY count(*) DESC LIMIT 1"),
    Template(("Which port has received the most voyages?", "Which port was the destination of the most voyages?"),
             "SELECT T2.name FROM voyage AS T1 JOIN port AS T2 ON T1.destination_port_id = T2.port_id GROUP BY T1.destination_port_id ORDER BY count(*) DESC LIMIT 1"),
    Template(("Which three vessels carried the greatest total cargo weight, and how much did each carry?",),
             "SELECT T1.name, sum(T3.weight_tonnes) FROM vessel AS T1 JOIN voyage AS T2 ON T1.vessel_id = T2.vessel_id JOIN cargo AS T3 ON T2.voyage_id = T3.voyage_id GROUP BY T1.vessel_id ORDER BY sum(T3.weight_tonnes) DESC LIMIT 3"),
    Template(("Which vessels have sailed from both {port1} and {port2}?",),
             "SELECT T2.name FROM voyage AS T1 JOIN vessel AS T2 ON T1.vessel_id = T2.vessel_id JOIN port AS T3 ON T1.origin_port_id = T3.port_id WHERE T3.name = '{port1}' INTERSECT SELECT T2.name FROM voyage AS T1 JOIN vessel AS T2 ON T1.vessel_id = T2.vessel_id JOIN port AS T3 ON T1.origin_port_id = T3.port_id WHERE T3.name = '{port2}'",
             "SELECT DISTINCT A.name AS port1, B.name AS port2 FROM port AS A, port AS B WHERE A.name < B.name"),
    Template(("Which {vessel_type} vessels have made a voyage longer than the average voyage?",),
             "SELECT DISTINCT T2.name FROM voyage AS T1 JOIN vessel AS T2 ON T1.vessel_id = T2.vessel_id WHERE T2.vessel_type = '{vessel_type}' AND T1.distance_nm > (SELECT avg(distance_nm) FROM voyage)",
             choices("vessel_type", VESSEL_TYPES), 2),
    Template(("Which vessels have carried {commodity} but never any hazardous cargo?",),
             "SELECT T1.name FROM vessel AS T1 JOIN voyage AS T2 ON T1.vessel_id = T2.vessel_id JOIN cargo AS T3 ON T2.voyage_id = T3.voyage_id WHERE T3.commodity = '{commodity}' EXCEPT SELECT T1.name FROM vessel AS T1 JOIN voyage AS T2 ON T1.vessel_id = T2.vessel_id JOIN cargo AS T3 ON T2.voyage_id = T3.voyage_id WHERE T3.is_hazardous = 1",
             "SELECT DISTINCT commodity FROM cargo WHERE is_hazardous = 0"),
    Template(("List the vessels based at {port} or built after {year}.",),
             "SELECT T1.name FROM vessel AS T1 JOIN port AS T2 ON T1.home_port_id = T2.port_id WHERE T2.name = '{port}' UNION SELECT name FROM vessel WHERE built_year > {year}",
             "SELECT DISTINCT T2.name AS port, T1.built_year - 1 AS year FROM vessel AS T1 JOIN port AS T2 ON T1.home_port_id = T2.port_id WHERE T1.built_year > 2015"),
    Template(("For each country, how many hazardous cargo items left its ports?",),
             "SELECT T3.country, count(*) FROM cargo AS T1 JOIN voyage AS T2 ON T1.voyage_id = T2.voyage_id JOIN port AS T3 ON T2.origin_port_id = T3.port_id WHERE T1.is_hazardous = 1 GROUP BY T3.country"),
)

DATABASES = (
    DatabaseSpec("town_library", "train", LIBRARY_SCHEMA, library_rows, LIBRARY_TEMPLATES),
    DatabaseSpec("family_clinic", "train", CLINIC_SCHEMA, clinic_rows, CLINIC_TEMPLATES),
    DatabaseSpec("bike_hire", "train", BIKE_SCHEMA, bike_rows, BIKE_TEMPLATES),
    DatabaseSpec("folk_festival", "train", FESTIVAL_SCHEMA, festival_rows, FESTIVAL_TEMPLATES),
    DatabaseSpec("hill_school", "dev", SCHOOL_SCHEMA, school_rows, SCHOOL_TEMPLATES),
    DatabaseSpec("coastal_freight", "dev", FREIGHT_SCHEMA, freight_rows, FREIGHT_TEMPLATES),
)

# --- writing the databases and their schema records -----------------------------------------


def write_database(spec: DatabaseSpec, path: Path) -> None:
    """Create the SQLite file from scratch (an old file is deleted, so contents never merge)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    rows_by_table = spec.make_rows(random.Random(f"rows:{spec.db_id}"))
    connection = sqlite3.connect(path)
    try:
        connection.execute("PRAGMA foreign_keys = ON")  # inserting a dangling reference fails loudly
        connection.executescript(spec.schema)
        for table, rows in rows_by_table.items():
            placeholders = ", ".join("?" * len(rows[0]))
            connection.executemany(f"INSERT INTO {table} VALUES ({placeholders})", rows)
        connection.commit()
    finally:
        connection.close()


def spider_column_type(name: str, declared_type: str) -> str:
    """Spider's column type: dates are TEXT named *_date, booleans are INTEGER named is_/has_."""
    if name.endswith("_date"):
        return "time"
    if name.startswith(("is_", "has_")):
        return "boolean"
    return {"INTEGER": "number", "REAL": "number", "TEXT": "text"}.get(declared_type.upper(), "others")


def natural_name(name: str) -> str:
    return name.replace("_", " ")


def schema_record(db_id: str, path: Path) -> dict:
    """A tables.json record read back from the SQLite file, so it cannot disagree with it."""
    connection = sqlite3.connect(path)
    try:
        tables = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY rowid")]
        columns: list[list] = [[-1, "*"]]
        types = ["text"]
        index_of: dict[tuple[str, str], int] = {}
        primary_keys = []
        for table_index, table in enumerate(tables):
            for _, name, declared_type, _, _, primary_key in connection.execute(f"PRAGMA table_info({table})"):
                index_of[(table, name)] = len(columns)
                if primary_key:
                    primary_keys.append(len(columns))
                columns.append([table_index, name])
                types.append(spider_column_type(name, declared_type))
        foreign_keys = [
            [index_of[(table, row[3])], index_of[(row[2], row[4])]]
            for table in tables
            for row in connection.execute(f"PRAGMA foreign_key_list({table})")
        ]
    finally:
        connection.close()
    return {
        "db_id": db_id,
        "table_names_original": tables,
        "table_names": [natural_name(table) for table in tables],
        "column_names_original": columns,
        "column_names": [[table_index, natural_name(name) if table_index >= 0 else name] for table_index, name in columns],
        "column_types": types,
        "primary_keys": primary_keys,
        "foreign_keys": sorted(foreign_keys),
    }


# --- questions ------------------------------------------------------------------------------

_ORDERED_QUERY = re.compile(
    r"^SELECT (?P<select>.+?) FROM (?P<body>.+?) ORDER BY (?P<key>.+?)(?P<direction> ASC| DESC)?(?: LIMIT (?P<limit>\d+))?$"
)


def has_unambiguous_order(connection: sqlite3.Connection, query: str) -> bool:
    """Whether ties in the ORDER BY key could change a correct answer.

    With LIMIT n, the first n+1 keys must be distinct (which rows make the cut, and their order,
    are then both fixed); an ordered list without LIMIT must have distinct keys. Queries without
    a top-level ORDER BY are always fine.
    """
    match = _ORDERED_QUERY.match(query)
    if match is None or " UNION " in query or " INTERSECT " in query or " EXCEPT " in query:
        return True
    key_query = f"SELECT {match['select']}, {match['key']} FROM {match['body']} ORDER BY {match['key']}{match['direction'] or ''}"
    keys = [row[-1] for row in connection.execute(key_query)]
    if match["limit"] is None:
        return len(set(keys)) == len(keys)
    top = keys[: int(match["limit"]) + 1]
    return len(set(top)) == len(top)


def is_good_answer(connection: sqlite3.Connection, query: str) -> bool:
    """Non-degenerate (a row with a non-NULL value), not a table dump, and not decided by ties."""
    rows = connection.execute(query).fetchall()
    has_value = any(value is not None for row in rows for value in row)
    return has_value and len(rows) <= MAX_ANSWER_ROWS and has_unambiguous_order(connection, query)


def plain_number(value: object) -> object:
    """170.0 -> 170, so questions read "above 170"; other values unchanged."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def parameter_rows(connection: sqlite3.Connection, params: str | tuple[dict, ...] | None) -> list[dict]:
    """The candidate slot fillings of a template, in a fixed order."""
    if params is None:
        return [{}]
    if isinstance(params, tuple):
        return list(params)
    cursor = connection.execute(params)
    names = [column[0] for column in cursor.description]
    return [dict(zip(names, row)) for row in sorted(set(cursor.fetchall()))]


def instantiate(template: Template, connection: sqlite3.Connection, rng: random.Random) -> list[tuple[str, str]]:
    """Up to `template.count` (question, query) pairs whose gold answers are good."""
    candidates = parameter_rows(connection, template.params)
    rng.shuffle(candidates)
    first_phrasing = rng.randrange(len(template.phrasings))
    pairs = []
    for slots in candidates:
        if len(pairs) == template.count:
            break
        slots = {name: plain_number(value) for name, value in slots.items()}
        if any("'" in str(value) for value in slots.values()):
            raise ValueError(f"parameter {slots} contains a quote; word lists must not, so gold SQL stays simple")
        query = template.query.format(**slots)
        if not is_good_answer(connection, query):
            continue
        phrasing = template.phrasings[(first_phrasing + len(pairs)) % len(template.phrasings)]
        pairs.append((phrasing.format(**slots), query))
    return pairs


def make_questions(spec: DatabaseSpec, database_path: Path) -> tuple[list[dict], list[str]]:
    """All question records of one database, and a warning for each template that fell short."""
    rng = random.Random(f"questions:{spec.db_id}")
    connection = sqlite3.connect(f"file:{database_path}?mode=ro", uri=True)
    records, warnings, seen_queries = [], [], set()
    try:
        for template in spec.templates:
            pairs = instantiate(template, connection, rng)
            if len(pairs) < template.count:
                warnings.append(f"{spec.db_id}: {len(pairs)}/{template.count} good instances of {template.query[:70]!r}")
            for question, query in pairs:
                if query in seen_queries:
                    raise ValueError(f"{spec.db_id}: duplicate gold query {query!r}")
                seen_queries.add(query)
                records.append({"db_id": spec.db_id, "question": question, "query": query})
    finally:
        connection.close()
    return records, warnings


# --- build and summary ----------------------------------------------------------------------


def write_json(path: Path, value: object) -> None:
    path.write_text(json.dumps(value, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def build(out_dir: Path) -> tuple[dict[str, list[dict]], list[str]]:
    """Write the whole dataset under out_dir; return the questions per split and any warnings."""
    out_dir.mkdir(parents=True, exist_ok=True)
    splits: dict[str, list[dict]] = {split: [] for split in SPLIT_FILES}
    schemas, warnings = [], []
    for spec in DATABASES:
        database_path = out_dir / "database" / spec.db_id / f"{spec.db_id}.sqlite"
        write_database(spec, database_path)
        schemas.append(schema_record(spec.db_id, database_path))
        records, spec_warnings = make_questions(spec, database_path)
        splits[spec.split].extend(records)
        warnings.extend(spec_warnings)
    write_json(out_dir / "tables.json", schemas)
    for split, file_name in SPLIT_FILES.items():
        write_json(out_dir / file_name, splits[split])
    return splits, warnings


def hardness_counts(records: list[dict]) -> Counter | None:
    """Spider hardness of each gold query, or None when sql_structure is not importable."""
    try:
        from sql_structure import classify_hardness
    except ImportError:
        return None
    return Counter(classify_hardness(record["query"]).value for record in records)


def print_summary(splits: dict[str, list[dict]], warnings: list[str]) -> None:
    for warning in warnings:
        print(f"warning: {warning}")
    total = sum(len(records) for records in splits.values())
    print(f"{total} questions over {len(DATABASES)} databases")
    for split, records in splits.items():
        per_database = Counter(record["db_id"] for record in records)
        print(f"{split}: {len(records)} questions: " + ", ".join(f"{db_id} {count}" for db_id, count in per_database.items()))
        hardness = hardness_counts(records)
        if hardness is None:
            print("  hardness: not computed (sql_structure is not importable)")
        else:
            print("  hardness: " + ", ".join(f"{level} {hardness[level]} ({hardness[level] / len(records):.0%})" for level in ("easy", "medium", "hard", "extra")))


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output folder (default: {DEFAULT_OUT})")
    return parser.parse_args()


if __name__ == "__main__":
    args = parse_args()
    splits, warnings = build(args.out)
    print(f"wrote {args.out}")
    print_summary(splits, warnings)
