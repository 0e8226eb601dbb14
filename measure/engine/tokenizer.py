"""Text <-> token ids for a tier: a ``tokenizer.json`` or the ByT5 byte scheme.

The engine never assumes special ids: they come from here (the scheme or the
tokenizer's vocabulary) unless the tier's metadata states them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from measure.errors import MeasureError

BYTE_OFFSET = 3
"""ByT5: ids 0, 1, 2 are pad, eos, unk; byte b is id b + 3."""


class Tokenizer(Protocol):
    @property
    def name(self) -> str:
        """What the tier's tokenizer is (``bytes`` or the file's name): read only, as a frozen dataclass's field."""
        ...

    def encode(self, text: str) -> list[int]: ...
    def encode_target(self, text: str) -> list[int]: ...
    def decode(self, ids: list[int]) -> str: ...
    def vocab_size(self) -> int: ...
    def vocabulary(self) -> dict[str, int]: ...
    def special_ids(self) -> dict[str, int]: ...


@dataclass(frozen=True)
class ByteTokenizer:
    """The ByT5 scheme: UTF-8 bytes shifted by three, eos appended to the source."""

    name: str = "bytes"

    def encode(self, text: str) -> list[int]:
        return [b + BYTE_OFFSET for b in text.encode("utf-8")] + [1]

    def encode_target(self, text: str) -> list[int]:
        """An output text as the decoder emits it: its bytes, no eos."""
        return [b + BYTE_OFFSET for b in text.encode("utf-8")]

    def decode(self, ids: list[int]) -> str:
        return bytes(i - BYTE_OFFSET for i in ids if BYTE_OFFSET <= i < 256 + BYTE_OFFSET).decode(
            "utf-8", errors="replace"
        )

    def vocab_size(self) -> int:
        return 256 + BYTE_OFFSET

    def vocabulary(self) -> dict[str, int]:
        return {"<pad>": 0, "</s>": 1, "<unk>": 2} | {f"<0x{b:02X}>": b + BYTE_OFFSET for b in range(256)}

    def special_ids(self) -> dict[str, int]:
        return {"pad_token_id": 0, "eos_token_id": 1, "unk_token_id": 2}


class JsonTokenizer:
    """A Hugging Face ``tokenizer.json`` read with the ``tokenizers`` library."""

    _PAD = ("<pad>", "[PAD]", "<|pad|>")
    _EOS = ("</s>", "[SEP]", "<|endoftext|>", "<eos>")

    def __init__(self, path: Path) -> None:
        from tokenizers import Tokenizer as HFTokenizer

        try:
            self._tok = HFTokenizer.from_file(str(path))
        except Exception as exc:
            raise MeasureError(f"{path}: not a tokenizer.json the tokenizers library can read ({exc})") from exc
        self.name = path.name

    def encode(self, text: str) -> list[int]:
        return list(self._tok.encode(text).ids)

    def encode_target(self, text: str) -> list[int]:
        """An output text as the decoder emits it: no special token added (no bos, no eos)."""
        return list(self._tok.encode(text, add_special_tokens=False).ids)

    def decode(self, ids: list[int]) -> str:
        return self._tok.decode(ids, skip_special_tokens=True)

    def vocab_size(self) -> int:
        return self._tok.get_vocab_size(with_added_tokens=True)

    def vocabulary(self) -> dict[str, int]:
        return dict(self._tok.get_vocab(with_added_tokens=True))

    def special_ids(self) -> dict[str, int]:
        found: dict[str, int] = {}
        for key, names in (("pad_token_id", self._PAD), ("eos_token_id", self._EOS)):
            for name in names:
                tid = self._tok.token_to_id(name)
                if tid is not None:
                    found[key] = tid
                    break
        return found


def load_tokenizer(folder: Path, spec: str | None) -> Tokenizer:
    """``spec`` is the tier metadata's ``tokenizer`` field: ``bytes``, a file name, or absent."""
    if spec == "bytes":
        return ByteTokenizer()
    if spec is not None and not isinstance(spec, str):
        raise MeasureError(f'{folder / "tier.json"}: field tokenizer: expected a file name or "bytes", got {spec!r}')
    path = folder / (spec or "tokenizer.json")
    inside = folder.resolve()
    if inside not in path.resolve().parents:
        # the tier's fingerprint hashes the files of its folder; a tokenizer elsewhere would decode unrecorded
        raise MeasureError(
            f"{folder / 'tier.json'}: field tokenizer: {spec!r} is outside the tier folder; "
            f"expected a file inside it (its sha256 is recorded with the tier)"
        )
    if not path.is_file():
        raise MeasureError(
            f'{folder}: no tokenizer: expected {path.name} (or "tokenizer": "bytes" in tier.json for ByT5 bytes)'
        )
    return JsonTokenizer(path)
