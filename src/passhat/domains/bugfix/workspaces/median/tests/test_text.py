from invoicer.text import slugify, truncate


def test_slugify():
    assert slugify("Café Müller GmbH, Köln") == "cafe-muller-gmbh-koln"


def test_truncate_leaves_short_text_alone():
    assert truncate("Paid", 10) == "Paid"


def test_truncate_fits_the_width():
    cut = truncate("Consulting services, March", 12)
    assert cut == "Consulting …"
    assert len(cut) == 12
