"""Self instructions per call from a callgrind dump (written with --compress-strings=no), in total and by
shared object: `callgrind_split.py NAME CALLS FILE` (bench/instructions_per_call.sh)."""
import sys
from collections import Counter


def split(path):
    """Self cost by function's object: a cost line right after `calls=` is a call's inclusive cost, not self."""
    by_object = Counter()
    obj = None
    after_call = False
    with open(path, errors="replace") as dump:
        for line in dump:
            if line.startswith("ob="):
                obj = line[3:].strip().rsplit("/", 1)[-1]
            elif line.startswith("calls="):
                after_call = True
            elif line[:1].isdigit() or line[:1] in "+-*":
                if after_call:
                    after_call = False
                    continue
                fields = line.split()
                if len(fields) >= 2:
                    by_object[obj or "?"] += int(fields[1])
    return by_object


def main():
    name, calls, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    by_object = split(path)
    total = sum(by_object.values())
    parts = ", ".join(f"{obj} {count / calls:,.0f}" for obj, count in by_object.most_common(6) if count >= calls)
    print(f"{name}: {total / calls:,.0f} instructions per call ({parts})")


if __name__ == "__main__":
    main()
