"""Documents in Turkish and English for the per-document language tests (issue 50): Turkish court files whose
words are forms of "mahkeme", English pages about places, and a mixed folder of both."""

from __future__ import annotations

from pathlib import Path

#: Forms of "mahkeme" (court) as Turkish documents write them.
FORMS = ["mahkemeye", "mahkemenin", "mahkemede", "mahkemeden", "mahkemeler", "mahkemelerin", "mahkeme", "mahkemelere",
         "mahkemesine"]  # fmt: skip
TOPICS = ["kira", "miras", "tapu", "boşanma", "işçilik", "tazminat", "icra", "vergi", "ticaret"]
EN_TOPICS = ["boiler", "garden", "river", "bridge", "market", "school", "museum", "harbour", "library", "railway",
             "theatre", "hospital", "airport", "castle", "factory", "stadium", "orchard", "lighthouse"]  # fmt: skip


def turkish_doc(i: int) -> str:
    return (
        f"# {TOPICS[i].title()} davası\n\n"
        f"Bu dosyada {TOPICS[i]} ile ilgili bir uyuşmazlık var. Davacı, dilekçesini asliye hukuk {FORMS[i]} "
        "verdi ve tarafların dinlenmesini istedi. Duruşma için bir gün belirlendi; tanıklar çağrıldı ve "
        "bilirkişi raporu dosyaya eklendi. Karar, itiraz süresi dolduktan sonra kesinleşti.\n"
    )


def english_doc(i: int) -> str:
    topic = EN_TOPICS[i]
    court = " The case about the old {t} went to the county court in the spring." if i % 3 == 0 else ""
    return (
        f"# The {topic}\n\n"
        f"The {topic} was built in the nineteenth century and is still used by the people of the town. It is "
        f"open to visitors from spring to autumn, and there are guided tours on most days of the week.{court}"
        " The council keeps it in good repair with the help of volunteers who give their time on weekends.\n"
    ).replace("{t}", topic)


def mixed_folder(root: Path) -> tuple[list[str], list[str]]:
    """18 English documents and 9 Turkish ones: (Turkish sources, English sources that hold 'court')."""
    turkish, court = [], []
    for i in range(len(EN_TOPICS)):
        (root / f"en_{i:02}.md").write_text(english_doc(i), encoding="utf-8")
        if i % 3 == 0:
            court.append(f"en_{i:02}.md")
    for i in range(len(FORMS)):
        (root / f"tr_{i:02}.md").write_text(turkish_doc(i), encoding="utf-8")
        turkish.append(f"tr_{i:02}.md")
    return turkish, court
