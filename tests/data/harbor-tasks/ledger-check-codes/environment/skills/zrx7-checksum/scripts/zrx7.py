"""ZRX-7 check codes for ledger record identifiers (see ../SKILL.md)."""

import sys
from pathlib import Path

ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
MODULUS = 1_000_003


def check_code(record: str) -> str:
    acc = 7
    for position, char in enumerate(record.strip(), start=1):
        acc = (acc * 31 + ord(char) * position) % MODULUS
    digits = []
    for _ in range(4):
        acc, digit = divmod(acc, 32)
        digits.append(ALPHABET[digit])
    return "ZX-" + "".join(reversed(digits))


def main(path: str) -> None:
    with Path(path).open() as records:
        for line in records:
            if line.strip():
                print(f"{line.strip()}\t{check_code(line)}")


if __name__ == "__main__":
    main(sys.argv[1])
