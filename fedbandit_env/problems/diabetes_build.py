"""Rebuild the shipped diabetes table from the UCI archive (run once, by maintainers).

The package ships ``fedbandit_env/data/diabetes.npz`` so that an installed wheel needs
no raw data; this module derives it from the original archive
(``dataset_diabetes.zip``, UCI id 296, CC BY 4.0; see ``fedbandit_env/data/README.md``):

    python -m fedbandit_env.problems.diabetes_build path/to/dataset_diabetes.zip

One byte per record, in the file's order (101,766 records), see :data:`BITS`:
bits 0-4 say which of Zhu et al.'s five arm groups the record is a sample of (a
medication of the group at ``Steady``; bit 4: every medication ``No``), bit 5 the reward
(``readmitted == ">30"``, Zhu et al. Sec. 5.2), bit 6 that the record is outside the
paper's arms (a dose ``Up`` or ``Down``, or ``tolazamide`` at ``Steady``, which no group
of the paper lists). Beside them, seven bytes of patient features per record
(:func:`encode_features`), the contexts of the linear problem.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import zipfile
from pathlib import Path

import numpy as np

from fedbandit_env.problems.diabetes import ARM_GROUPS, BITS, DATA_PATH, MEDICATIONS

ARCHIVE_SHA256 = "2cc570fc34b09ba1169d94b68c27ce3802dce7dc4ab6082bed833a6c195507a5"
MEMBER = "dataset_diabetes/diabetic_data.csv"


def encode(rows: list[dict[str, str]]) -> np.ndarray:
    """One byte per record (see :data:`~fedbandit_env.problems.diabetes.BITS`).

    Examples:
        >>> row = {m: "No" for m in MEDICATIONS} | {"insulin": "Steady", "readmitted": ">30"}
        >>> int(encode([row])[0]) == (1 << BITS["insulin"]) | (1 << BITS["reward"])
        True
    """
    codes = np.zeros(len(rows), dtype=np.uint8)
    for r, row in enumerate(rows):
        status = {m: row[m] for m in MEDICATIONS}
        code = 0
        for name, group in ARM_GROUPS.items():
            if name == "none":
                hit = all(v == "No" for v in status.values())
            else:
                hit = any(status[m] == "Steady" for m in group)
            code |= int(hit) << BITS[name]
        outside = any(v in ("Up", "Down") for v in status.values())
        outside |= status["tolazamide"] == "Steady"
        code |= int(outside) << BITS["outside"]
        code |= int(row["readmitted"] == ">30") << BITS["reward"]
        codes[r] = code
    return codes


def encode_features(rows: list[dict[str, str]]) -> np.ndarray:
    """Patient features (:data:`~fedbandit_env.problems.diabetes.FEATURES`), one byte each:
    age decade (0-9), female, days in hospital, medications, prior inpatient visits,
    diagnoses, HbA1c measured.

    Examples:
        >>> row = {"age": "[70-80)", "gender": "Female", "time_in_hospital": "3",
        ...        "num_medications": "12", "number_inpatient": "1",
        ...        "number_diagnoses": "9", "A1Cresult": ">8"}
        >>> encode_features([row]).tolist()
        [[7, 1, 3, 12, 1, 9, 1]]
    """
    out = np.zeros((len(rows), 7), dtype=np.uint8)
    for r, row in enumerate(rows):
        out[r] = (
            int(row["age"].strip("[)").split("-")[0]) // 10,
            row["gender"] == "Female",
            int(row["time_in_hospital"]),
            min(int(row["num_medications"]), 255),
            min(int(row["number_inpatient"]), 255),
            int(row["number_diagnoses"]),
            row["A1Cresult"] != "None",
        )
    return out


def build(archive: Path, out: Path = DATA_PATH) -> Path:
    """Read the archive (checking its sha256), encode every record, save ``out``."""
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    if digest != ARCHIVE_SHA256:
        raise ValueError(f"{archive}: sha256 {digest}, expected UCI's {ARCHIVE_SHA256}")
    with zipfile.ZipFile(archive) as z, z.open(MEMBER) as f:
        rows = list(csv.DictReader(io.TextIOWrapper(f, encoding="utf-8", newline="")))
    np.savez_compressed(out, codes=encode(rows), features=encode_features(rows))
    return out


if __name__ == "__main__":  # pragma: no cover - a maintainer's tool
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("archive", type=Path, help="dataset_diabetes.zip from the UCI repository")
    p.add_argument("--out", type=Path, default=DATA_PATH)
    print(f"wrote {build(p.parse_args().archive, p.parse_args().out)}")
