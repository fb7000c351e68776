"""Text for invoice documents: file-name slugs and fixed-width columns."""

import re
import unicodedata


def slugify(text: str) -> str:
    """Lower-case ASCII words joined by hyphens, for file names: "Café Müller" -> "cafe-muller"."""
    plain = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "-", plain.lower()).strip("-")


def truncate(text: str, width: int, ellipsis: str = "…") -> str:
    """`text` cut to at most `width` characters, ending in `ellipsis` when it was cut."""
    if len(text) <= width:
        return text
    return text[:width] + ellipsis
