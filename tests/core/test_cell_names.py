"""CellStore file names: readable, reversible, filesystem-safe; the earlier
naming still read."""

import random
import re
import string

import pytest

from jaxpapers import core
from jaxpapers.core import cache as cache_lib

CellStore = core.CellStore

AWKWARD = [
  "z",
  "train_seed=0/main",
  "digits/T4000/adam+ext",
  "50%",
  "%2F",  # looks like an escape of the earlier naming
  "a+b c",
  "a~b/c",
  "~",
  "/",
  "//",
  "a//b",
  "/lead",
  "trail/",
  ".",
  "..",
  ".hidden/x",
  "x/..",
  "C:\\dir\\file",
  'q?*"<>|:',
  "tab\tnew\nline",
  "ünïcødé/κλειδί/键",
  "emoji 🙂",
  "e\u0301",  # a combining accent (NFD), kept as written
  "a.json",
  "_checkpoints",
]

# What a file name may hold: the kept characters, the "~" separator and %XX
# escapes.
FILE_NAME = re.compile(r"(?:[A-Za-z0-9\-_.=,+@~]|%[0-9A-F]{2})+\.json")


def test_known_names_map_to_the_documented_file_names():
  assert CellStore.filename("train_seed=0/main") == "train_seed=0~main.json"
  assert (
    CellStore.filename("digits/T4000/adam+ext") == "digits~T4000~adam+ext.json"
  )
  assert CellStore.filename("lr=0.1,b@2") == "lr=0.1,b@2.json"
  assert CellStore.filename("a b/50%") == "a%20b~50%25.json"
  assert CellStore.filename("a~b") == "a%7Eb.json"
  assert CellStore.filename(".x/.y") == "%2Ex~.y.json"
  assert CellStore.filename("é|") == "%C3%A9%7C.json"


@pytest.mark.parametrize("name", AWKWARD)
def test_file_names_round_trip_and_are_safe(name):
  fname = CellStore.filename(name)
  assert CellStore.name_of(fname) == name
  assert FILE_NAME.fullmatch(fname), fname
  assert not fname.startswith(".") and "/" not in fname and "\\" not in fname
  assert len(fname.encode()) == len(fname)  # ASCII only


def test_file_names_of_random_strings_round_trip_and_never_collide():
  rng = random.Random(0)
  alphabet = string.printable + "/~%=+.é€🙂\u0301"
  names = {
    "".join(rng.choices(alphabet, k=rng.randint(1, 12))) for _ in range(3000)
  }
  names |= set(AWKWARD)
  files = {CellStore.filename(n): n for n in names}
  assert len(files) == len(names)  # injective
  assert all(CellStore.name_of(f) == n for f, n in files.items())


def test_bad_names_and_file_names_are_refused():
  with pytest.raises(TypeError, match="non-empty str"):
    CellStore.filename("")
  with pytest.raises(TypeError, match="non-empty str"):
    CellStore.filename(3)
  for bad in ("x.txt", ".json", "x"):
    with pytest.raises(ValueError, match="encoded name"):
      CellStore.name_of(bad)
  with pytest.raises(ValueError, match="not UTF-8"):
    CellStore.name_of("%FF.json")


def test_a_store_of_awkward_names_writes_the_documented_files_and_reads_them_back(
  tmp_path,
):
  store = CellStore(tmp_path / "cells")
  for i, name in enumerate(AWKWARD):
    store.put(name, {"i": i})
  on_disk = sorted(p.name for p in (tmp_path / "cells").iterdir())
  assert on_disk == sorted(CellStore.filename(n) for n in AWKWARD)
  reopened = CellStore(tmp_path / "cells")
  assert reopened.items() == sorted(
    (n, {"i": i}) for i, n in enumerate(AWKWARD)
  )


def test_cells_under_the_earlier_percent_encoded_names_still_resume(tmp_path):
  cells = tmp_path / "cells"
  cells.mkdir()
  names = ["train_seed=0/main", "digits/T60/adam+ext", "plain"]
  for i, name in enumerate(names):
    cache_lib.write_json(
      cells / CellStore.legacy_filename(name), {"name": name, "value": i}
    )
  assert (cells / "train_seed%3D0%2Fmain.json").exists()
  assert (cells / "digits%2FT60%2Fadam%2Bext.json").exists()
  store = CellStore(cells)
  assert store.items() == [
    ("digits/T60/adam+ext", 1),
    ("plain", 2),
    ("train_seed=0/main", 0),
  ]

  def fail(_):
    raise AssertionError("a stored cell was computed again")

  assert store.get_or_compute("train_seed=0/main", fail) == 0
  # A put moves the cell to its current name and removes the file of the earlier
  # one.
  store.put("train_seed=0/main", 10)
  assert not (cells / "train_seed%3D0%2Fmain.json").exists()
  assert (cells / "train_seed=0~main.json").exists()
  assert CellStore(cells)["train_seed=0/main"] == 10


def test_a_cell_in_both_namings_is_read_from_the_current_file(tmp_path):
  cells = tmp_path / "cells"
  cells.mkdir()
  # the current file sorts after the legacy one; the reverse case too
  name = "a=1/b"
  for n, (old, new) in {name: ("old", "new"), "~x": ("old2", "new2")}.items():
    cache_lib.write_json(
      cells / CellStore.legacy_filename(n), {"name": n, "value": old}
    )
    cache_lib.write_json(
      cells / CellStore.filename(n), {"name": n, "value": new}
    )
  assert sorted(p.name for p in cells.iterdir()) == [
    "%7Ex.json",
    "a%3D1%2Fb.json",
    "a=1~b.json",
    "~x.json",  # the earlier naming left "~" as it is
  ]
  store = CellStore(cells)
  assert store.to_dict() == {name: "new", "~x": "new2"}
  store.put("~x", "newer")
  store.put(name, "newer")
  assert sorted(p.name for p in cells.iterdir()) == ["%7Ex.json", "a=1~b.json"]
  assert CellStore(cells).to_dict() == {name: "newer", "~x": "newer"}


def test_a_put_never_overwrites_another_cells_file_of_the_earlier_naming(
  tmp_path,
):
  # The earlier naming kept "~": the old file of "~x" is called what "/x" is
  # called now.
  cells = tmp_path / "cells"
  cells.mkdir()
  cache_lib.write_json(
    cells / CellStore.legacy_filename("~x"), {"name": "~x", "value": 1}
  )
  assert (
    CellStore.legacy_filename("~x") == CellStore.filename("/x") == "~x.json"
  )
  store = CellStore(cells)
  store.put("/x", 2)
  assert sorted(p.name for p in cells.iterdir()) == ["%7Ex.json", "~x.json"]
  assert CellStore(cells).to_dict() == {"/x": 2, "~x": 1}
  store.put("~x", 3)  # its stale file is now "/x"'s: kept
  assert CellStore(cells).to_dict() == {"/x": 2, "~x": 3}


def test_an_interrupted_cell_resumes_from_a_checkpoint_of_the_earlier_naming(
  tmp_path,
):
  store = CellStore(tmp_path / "cells")
  name = "lr=0.1/seed=0"
  legacy = tmp_path / "cells" / "_checkpoints" / "lr%3D0.1%2Fseed%3D0"
  assert store.checkpoint_dir(name).name == "lr=0.1~seed=0"
  legacy.mkdir(parents=True)
  (legacy / "step").write_text("3")
  assert store.checkpoint_dir(name) == legacy
  seen = []
  assert (
    store.get_or_compute(
      name, lambda d: seen.append(d) or (d / "step").read_text()
    )
    == "3"
  )
  assert seen == [legacy] and not (tmp_path / "cells" / "_checkpoints").exists()
