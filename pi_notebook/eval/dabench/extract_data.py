"""Write the task set's CSV files in ``data/`` from the wheels of the packages that ship them.

    pip download --no-deps -d WHEELS scikit-learn==1.9.1 vega_datasets==0.9.0
    python extract_data.py WHEELS

Nothing is installed: the files are read from the wheels (zip archives). The output is what is
committed; see ``LICENSES.md`` for where each table comes from.
"""

from __future__ import annotations

import gzip
import io
import json
import sys
import zipfile
from pathlib import Path

import pandas as pd

HERE = Path(__file__).parent
DATA = HERE / "data"

_SOURCES = ("mean", "error", "worst")
_CANCER_FEATURES = (
    "radius",
    "texture",
    "perimeter",
    "area",
    "smoothness",
    "compactness",
    "concavity",
    "concave_points",
    "symmetry",
    "fractal_dimension",
)
_WINE = [
    "alcohol",
    "malic_acid",
    "ash",
    "alcalinity_of_ash",
    "magnesium",
    "total_phenols",
    "flavanoids",
    "nonflavanoid_phenols",
    "proanthocyanins",
    "color_intensity",
    "hue",
    "od280_od315",
    "proline",
]


def _cancer_columns() -> list[str]:
    out = [f"mean_{f}" for f in _CANCER_FEATURES]
    out += [f"{f}_error" for f in _CANCER_FEATURES]
    out += [f"worst_{f}" for f in _CANCER_FEATURES]
    return out


def _sklearn_table(raw: bytes, columns: list[str], target: str, names: list[str]) -> pd.DataFrame:
    # sklearn's bundled CSVs start with a line "n_samples,n_features,class names..."
    table = pd.read_csv(io.BytesIO(raw), skiprows=1, header=None)
    table.columns = [*columns, target]
    table[target] = [names[int(i)] for i in table[target]]
    return table


def extract(wheels: Path) -> None:
    sklearn = zipfile.ZipFile(next(wheels.glob("scikit_learn-*.whl")))
    vega = zipfile.ZipFile(next(wheels.glob("vega_datasets-*.whl")))
    DATA.mkdir(exist_ok=True)

    def sk(name: str) -> bytes:
        return sklearn.read(f"sklearn/datasets/data/{name}")

    def vg(name: str) -> bytes:
        return vega.read(f"vega_datasets/_data/{name}")

    iris = ["sepal_length", "sepal_width", "petal_length", "petal_width"]
    _sklearn_table(sk("iris.csv"), iris, "species", ["setosa", "versicolor", "virginica"]).to_csv(
        DATA / "iris.csv", index=False
    )
    _sklearn_table(sk("wine_data.csv"), _WINE, "cultivar", ["0", "1", "2"]).to_csv(
        DATA / "wine.csv", index=False
    )
    _sklearn_table(
        sk("breast_cancer.csv"), _cancer_columns(), "diagnosis", ["malignant", "benign"]
    ).to_csv(DATA / "breast_cancer.csv", index=False)
    diabetes = pd.read_csv(
        io.BytesIO(gzip.decompress(sk("diabetes_data_raw.csv.gz"))), sep=" ", header=None
    )
    diabetes.columns = ["age", "sex", "bmi", "bp", "s1", "s2", "s3", "s4", "s5", "s6"]
    target = pd.read_csv(io.BytesIO(gzip.decompress(sk("diabetes_target.csv.gz"))), header=None)
    diabetes["progression"] = target[0].round().astype(int)
    diabetes.to_csv(DATA / "diabetes.csv", index=False)
    for part in ("exercise", "physiological"):
        table = pd.read_csv(io.BytesIO(sk(f"linnerud_{part}.csv")), sep=r"\s+")
        table.insert(0, "athlete", range(1, len(table) + 1))
        table.to_csv(DATA / f"linnerud_{part}.csv", index=False)
    cars = pd.DataFrame(json.loads(vg("cars.json")))
    cars.to_csv(DATA / "cars.csv", index=False)
    for name in ("seattle-weather", "stocks", "airports", "iowa-electricity", "us-employment"):
        (DATA / name.replace("-", "_")).with_suffix(".csv").write_bytes(vg(f"{name}.csv"))


if __name__ == "__main__":
    extract(Path(sys.argv[1]))
