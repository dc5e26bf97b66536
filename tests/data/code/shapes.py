"""Geometry helpers used by the chunking tests."""

import math
from dataclasses import dataclass

UNIT = 1.0


# Area of a circle; the comment belongs to the function below.
def circle_area(radius: float) -> float:
    """Return the area of a circle."""
    return math.pi * radius**2


@dataclass(frozen=True)
class Shape:
    """A named shape."""

    name: str

    def describe(self) -> str:
        return f"shape {self.name}"

    class Meta:
        """Nested options."""

        def ordering(self) -> list[str]:
            return ["name"]


async def fetch_größe(url: str) -> int:
    return len(url)


if __name__ == "__main__":
    print(circle_area(UNIT))
