"""`expmrc export`: ExpMRC datasets as a Hugging Face dataset folder (Parquet or JSON Lines, one row per
question), with a dataset card whose YAML names one config per subset; written with `datasets` and
`pyarrow` (the `export` extra) into a staging folder that appears in one rename."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from expmrc.data import subsets
from expmrc.data.datasets import Dataset
from expmrc.data.io import atomic_directory
from expmrc.data.rows import dataset_rows, document, first_difference
from expmrc.errors import ExpmrcError

FORMATS = ("parquet", "jsonl")  # --format, which is also the files' extension
LICENSE = "cc-by-sa-4.0"
CITATION = """\
@article{cui2022expmrc,
  title   = {ExpMRC: Explainability Evaluation for Machine Reading Comprehension},
  author  = {Cui, Yiming and Liu, Ting and Che, Wanxiang and Chen, Zhigang and Wang, Shijin},
  journal = {Heliyon},
  volume  = {8},
  number  = {4},
  pages   = {e09290},
  year    = {2022},
  doi     = {10.1016/j.heliyon.2022.e09290}
}"""


@dataclass
class Exported:
    """One subset written: its config name, file (relative to the folder), rows, and the round-trip check."""

    subset: str
    file: str
    rows: int
    difference: str | None  # where the file rebuilt from the export differs from the source, or None


def libraries() -> tuple[Any, Any]:
    """`datasets` and `pyarrow.parquet`, or one line naming the extra that brings them."""
    try:
        import datasets
        import pyarrow.parquet as parquet
    except ModuleNotFoundError as exc:
        raise ExpmrcError(f"expmrc export needs {exc.name}: pip install 'expmrc[export]'") from None
    datasets.disable_progress_bars()  # one line per subset from the command instead
    return datasets, parquet


def features() -> Any:
    """The column types of every exported subset (one schema for all, so subsets concatenate)."""
    datasets, _ = libraries()
    text, texts = datasets.Value("string"), datasets.List(datasets.Value("string"))
    index = datasets.Value("int32")
    return datasets.Features({
        "id": text, "subset": text, "language": text, "task": text, "context": text, "question": text,
        "options": texts, "answers": {"text": texts, "answer_start": datasets.List(index)}, "evidences": texts,
        "version": text, "title": text, "passage_id": text,
        "position": {"article": index, "paragraph": index, "question": index},
    })


def read_back(path: Path, fmt: str) -> list[dict[str, Any]]:
    """The rows of a file just written, read by pyarrow (Parquet) or line by line (JSON Lines)."""
    if fmt == "parquet":
        _, parquet = libraries()
        return parquet.read_table(path).to_pylist()
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_subset(folder: Path, dataset: Dataset, fmt: str, split: str) -> Exported:
    """Write one subset's rows to `folder/SUBSET/SPLIT.EXT` and check that they give back the source file."""
    datasets, _ = libraries()
    rows = dataset_rows(dataset)
    table = datasets.Dataset.from_list(rows, features=features())
    relative = f"{dataset.subset}/{split}.{fmt}"
    path = folder / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "parquet":
        table.to_parquet(str(path))
    else:
        table.to_json(str(path), lines=True, force_ascii=False)
    difference = first_difference(dataset.raw, document(read_back(path, fmt)))
    return Exported(dataset.subset, relative, len(rows), difference)


def export(loaded: list[Dataset], fmt: str, output: str, split: str, overwrite: bool) -> list[Exported]:
    """Write the datasets (one per subset) and the dataset card into `output`, in one rename."""
    if fmt not in FORMATS:
        raise ExpmrcError(f"--format {fmt!r}: choose parquet or jsonl")
    seen: dict[str, str] = {}
    for dataset in loaded:
        if dataset.subset in seen:
            raise ExpmrcError(f"{dataset.path}: a second {dataset.subset} dataset (the first is {seen[dataset.subset]}); "
                              "one config per subset, so export it into another folder")
        seen[dataset.subset] = dataset.path
    libraries()
    with atomic_directory(output, overwrite=overwrite, inputs=[d.path for d in loaded]) as staging:
        written = [write_subset(staging, dataset, fmt, split) for dataset in loaded]
        (staging / "README.md").write_text(card(written, loaded, split), encoding="utf-8")
    return written


def card_metadata(written: list[Exported], loaded: list[Dataset], split: str) -> dict[str, Any]:
    """The YAML header of the dataset card: licence, languages, tasks, one config per subset with its
    file and split, and each config's features (so JSON Lines load with the same types as Parquet)."""
    kinds = {d.kind for d in loaded}
    return {
        "license": LICENSE,
        "language": sorted({d.language for d in loaded}),
        "pretty_name": "ExpMRC",
        "task_categories": sorted({"question-answering" if k == "span" else "multiple-choice" for k in kinds}),
        "configs": [{"config_name": w.subset, "data_files": [{"split": split, "path": w.file}]} for w in written],
        "dataset_info": [{"config_name": w.subset, "features": features()._to_yaml_list()} for w in written],
    }


def card(written: list[Exported], loaded: list[Dataset], split: str) -> str:
    """The dataset card (README.md): YAML header, what the data are, the columns, loading, licence, citation."""
    import yaml  # PyYAML comes with `datasets`

    header = yaml.safe_dump(card_metadata(written, loaded, split), sort_keys=False, allow_unicode=True)
    sections = (_card_overview(written, split), _card_columns(written[0].subset, split), _card_licence())
    return f"---\n{header}---\n\n" + "\n\n".join(sections) + "\n"


def _card_overview(written: list[Exported], split: str) -> str:
    """The card's first section: what ExpMRC is, a row per config (subset, questions, file, source, round trip)
    and how to load one."""
    configs = "\n".join(f"| `{w.subset}` | {subsets.subset(w.subset).display} | {w.rows} | `{w.file}` | "
                        f"{subsets.subset(w.subset).source} | {'exact' if w.difference is None else 'differs at `' + w.difference + '`'} |"
                        for w in written)
    first = written[0].subset
    return f"""# ExpMRC

ExpMRC (Cui et al., 2022) asks a reading-comprehension system for the answer to each question and a
passage span that is its evidence. SQuAD and CMRC 2018 are span extraction (English, Chinese), RACE+
and C3 multiple choice (English, Chinese). Written by `expmrc export` from the original files, one row
per question.

| config | subset | questions | file | built on | round trip |
| --- | --- | --- | --- | --- | --- |
{configs}

```python
from datasets import load_dataset
questions = load_dataset("PATH/TO/THIS/FOLDER", "{first}", split="{split}")
```"""


def _card_columns(first: str, split: str) -> str:
    """The card's Columns section: what each column holds, and how rows go back to ExpMRC JSON."""
    names = "/".join(f"`{name}`" for name in subsets.names())
    return f"""## Columns

| column | holds |
| --- | --- |
| `id` | the question id, as the leaderboard and submissions name it |
| `subset`, `language`, `task` | {names}; `en` or `zh`; `span` or `choice` |
| `context` | the passage |
| `question` | the question |
| `options` | the options, labelled A, B, ... in order (empty for span) |
| `answers` | `text`: the gold answers (span) or the gold letter (choice); `answer_start`: the gold answers' character offsets in `context` (span; null where the file gives none) |
| `evidences` | the annotated evidence texts (null where the file has none) |
| `version`, `title`, `passage_id`, `position` | the file's `version`, the article's title, the paragraph's or passage's `id`, and the question's place in the file, so that the original JSON can be rebuilt |

Back to the ExpMRC JSON that `eval_expmrc.py` and `expmrc evaluate` read (where the round trip above is
exact, the source document itself, key order aside):

```python
import json
from expmrc.data.rows import document
json.dump(document(questions), open("expmrc-{first}-{split}.json", "w"), ensure_ascii=False)
```"""


def _card_licence() -> str:
    """The card's Licence and Citation sections."""
    return f"""## Licence

The ExpMRC data are released by their authors under CC BY-SA 4.0 ({LICENSE}); they are built on the
datasets named above, whose terms also apply. Cite the ExpMRC paper and the source datasets when you
use them.

## Citation

```bibtex
{CITATION}
```"""
