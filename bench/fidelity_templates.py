"""The facts bench/fidelity_plant.py plants: for each template, what its author says, what
someone else says about them, how they change it later, and two questions in other words (one
asking for the value, one asking who). Values are short, distinctive, and checked against the
corpus before use (a value the chat already says is never planted).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Template:
    key: str
    said: str  # by the person; {value}
    about: str  # by someone else about {subject}; {value}
    update: str  # the person's later change; {value} the new one, {old} the old one
    question: str  # about {person}: the value is the answer
    who: str  # naming {value}: the person is the answer
    values: tuple[str, ...]


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


CITIES = _words(
    "Borås Tromsø Kraków Ljubljana Tartu Gdańsk Brno Porto Bilbao Aarhus Bergen Turku Graz Ghent "
    "Utrecht Lund Uppsala Reykjavík Cluj Split Zadar Kaunas Vilnius Riga Tampere Oulu Salzburg "
    "Innsbruck Lyon Nantes Bordeaux Toulouse Dijon Rennes Trieste Verona Bologna Palermo Seville "
    "Valencia Granada Coimbra Galway Cork Dundee Inverness Aberdeen Cardiff Swansea Plymouth Leeds "
    "Sheffield Brighton Hobart Darwin Adelaide Perth Wellington Dunedin Halifax Winnipeg Regina "
    "Saskatoon Tucson Boise Spokane Tulsa Omaha Albuquerque Savannah Mombasa Arusha Kumasi Durban "
    "Windhoek Cusco Arequipa Valparaíso Mendoza Rosario Montevideo Oaxaca Mérida Puebla Hanoi Hue "
    "Penang Kochi Mysore Jaipur Kandy Osaka Sapporo Busan Taipei Tbilisi Yerevan Baku"
)
PETS = _words(
    "Biscuit Pickle Noodle Waffle Pretzel Muffin Nacho Dumpling Truffle Pudding Crumpet Toffee "
    "Marzipan Brioche Paprika Saffron Nutmeg Juniper Clementine Quince Bramble Thistle Fennel "
    "Sorrel Barnaby Horatio Archibald Bartholomew Montgomery Cornelius Ignatius Rupert Winston "
    "Percival Reginald Ferdinand Leopold Gulliver Humphrey Mortimer Cuthbert Barnabus Tiberius "
    "Obadiah Zebedee Ptolemy Florentine Ottoline Wilhelmina Philippa"
)
INSTRUMENTS = _words(
    "cello oboe banjo ukulele harp bassoon trombone accordion mandolin clarinet sitar theremin "
    "bagpipes harmonica xylophone marimba didgeridoo tuba piccolo harpsichord balalaika "
    "bouzouki dulcimer zither"
)
CARS = (
    "Volvo 240",
    "Saab 900",
    "Skoda Octavia",
    "Fiat Panda",
    "Lada Niva",
    "Citroen Xantia",
    "Peugeot 205",
    "Renault Espace",
    "Opel Kadett",
    "Dacia Duster",
    "Subaru Forester",
    "Mazda Miata",
    "Toyota Corolla",
    "Honda Jazz",
    "Nissan Micra",
    "Suzuki Jimny",
    "Volkswagen Polo",
    "Alfa Romeo Spider",
    "Trabant 601",
    "Seat Ibiza",
    "Mini Cooper",
    "Kia Ceed",
    "Hyundai Tucson",
    "Ford Mondeo",
    "Rover 75",
)
ALLERGENS = _words(
    "peanuts shellfish kiwi sesame celery mustard lupin hazelnuts walnuts cashews pistachios "
    "almonds strawberries avocado mango buckwheat chickpeas lentils soy coconut"
)
LANGUAGES = _words(
    "Finnish Icelandic Basque Welsh Georgian Tagalog Hungarian Estonian Latvian Lithuanian "
    "Maltese Swahili Yoruba Amharic Armenian Mongolian Khmer Tamil Malayalam Breton Catalan "
    "Galician Slovenian Albanian"
)
MONTHS = _words("January February March April May June July August September October November December")
DATES = tuple(f"{month} {day}" for month in MONTHS for day in (3, 9, 17, 23, 28))
CODES = tuple(str(n) for n in range(4113, 9999, 97))
# Drawn only once a template's own values run out (a long corpus, 200 facts: its chat says many
# cities, languages and numbers already), in a fixed order of their own, so a run that never
# needs them draws exactly what it drew before they existed.
OVERFLOW = {
    "code": tuple(str(n) for n in range(1009, 9999, 13) if str(n) not in CODES),
    "party": tuple(
        f"{month} {day}" for month in MONTHS for day in range(1, 29) if day not in (3, 9, 17, 23, 28)
    ),
}

TEMPLATES = (
    Template(
        "wedding",
        "can't make it that weekend, my sister's wedding is in {value} on the 14th",
        "{subject} can't come that weekend, their sister gets married in {value}",
        "correction, the wedding moved, it's in {value} now, not {old}",
        "Where will {person}'s sibling tie the knot?",
        "Whose family celebration takes place in {value}?",
        CITIES,
    ),
    Template(
        "moving",
        "got the job offer, we pack up and move to {value} next month",
        "{subject} is leaving us, off to live in {value} next month",
        "plans changed, not {old} after all, we're going to {value}",
        "Which city is {person} relocating to?",
        "Who is relocating to {value}?",
        CITIES,
    ),
    Template(
        "dog",
        "we adopted a puppy yesterday, his name is {value}",
        "{subject} got a puppy, they named it {value}",
        "we renamed the puppy, {old} didn't suit him, he's {value} now",
        "What is {person}'s new pet hound called?",
        "Whose pet hound answers to {value}?",
        PETS,
    ),
    Template(
        "lessons",
        "I signed up for {value} lessons, practising every evening now",
        "{subject} takes {value} lessons these days",
        "quit the {old} lessons, switched to {value} instead",
        "Which musical instrument is {person} learning to play?",
        "Who is learning to play the {value}?",
        INSTRUMENTS,
    ),
    Template(
        "code",
        "note to self: the storage unit code is {value}",
        "{subject}'s storage unit code is {value}, they keep forgetting it",
        "new storage unit code, {old} stopped working, it's {value}",
        "What number opens {person}'s lock-up?",
        "Whose lock-up opens with {value}?",
        CODES,
    ),
    Template(
        "race",
        "registered for the {value} marathon in spring, training starts monday",
        "{subject} is running the {value} marathon this spring",
        "switched races, doing {value} instead of {old}",
        "Which race is {person} preparing for?",
        "Who is entered in the {value} race?",
        CITIES,
    ),
    Template(
        "car",
        "finally bought a car, a used {value}, picked it up today",
        "{subject} bought a used {value}",
        "sold the {old}, got a {value} instead",
        "What vehicle does {person} drive these days?",
        "Who owns a {value}?",
        CARS,
    ),
    Template(
        "party",
        "my birthday party is on {value}, you're all invited",
        "{subject}'s birthday party is on {value}",
        "moved my party from {old} to {value}",
        "When is {person} celebrating turning a year older?",
        "Whose celebration falls on {value}?",
        DATES,
    ),
    Template(
        "allergy",
        "can't eat that, I'm allergic to {value}",
        "careful with snacks for {subject}, they're allergic to {value}",
        "turns out it's not {old}, the test said I'm allergic to {value}",
        "Which food makes {person} ill?",
        "Who reacts badly to {value}?",
        ALLERGENS,
    ),
    Template(
        "language",
        "started evening classes in {value}, the grammar is brutal",
        "{subject} goes to {value} classes in the evening",
        "dropped {old}, doing {value} classes now",
        "What tongue is {person} studying?",
        "Who studies {value} at night school?",
        LANGUAGES,
    ),
)
ABOUT_QUESTION = "According to the others here, {question} And who told us?"
