"""erlang:phash2 and rand's exs1024 as WarrenMQ computes them, compared with a real Erlang/OTP (the
``escript`` that ships with RabbitMQ's Erlang) on thousands of generated terms and seeds."""

from __future__ import annotations

import random
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from broker.core.exchanges.erlang_hash import PHASH2_RANGE, Atom, atom_hash, phash2
from broker.core.exchanges.jump_hash import _more_draws, exs1024_seed, exs1024_uniforms, jump_consistent_hash

ESCRIPT = shutil.which("escript")
needs_erlang = pytest.mark.skipif(ESCRIPT is None, reason="no Erlang/OTP (escript) to compare with")

_PHASH2_SCRIPT = r"""
main([File]) ->
  {ok, Terms} = file:consult(File),
  [io:format("~b ~b~n", [erlang:phash2(fix(T)), erlang:phash2(fix(T), 1000)]) || T <- Terms].
fix({'$float', Bits}) -> <<X/float>> = <<Bits:64>>, X;
fix(T) when is_tuple(T) -> list_to_tuple([fix(E) || E <- tuple_to_list(T)]);
fix(T) when is_list(T) -> [fix(E) || E <- T];
fix(T) -> T.
"""

_RAND_SCRIPT = r"""
main([File]) ->
  {ok, [Keys]} = file:consult(File),
  lists:foreach(fun(K) ->
      S0 = rand:seed_s(exs1024, {K, K, K}),
      {Rs, _} = lists:foldl(fun(_, {Acc, S}) -> {R, S1} = rand:uniform_s(S), {[R | Acc], S1} end,
                            {[], S0}, lists:seq(1, 40)),
      io:format("~w~n", [lists:reverse(Rs)])
  end, Keys).
"""


def _erlang(value: object) -> str:
    """``value`` as an Erlang literal for file:consult (floats by their bits, restored by ``fix``)."""
    if isinstance(value, Atom):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(value, str):
        return _erlang(value.encode())
    if isinstance(value, bytes):
        return "<<" + ",".join(map(str, value)) + ">>"
    if value is None or isinstance(value, bool):
        return {None: "undefined", True: "true", False: "false"}[value]
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        bits = struct.unpack("<Q", struct.pack("<d", value))[0]
        return f"{{'$float', {bits}}}"
    if isinstance(value, tuple):
        return "{" + ",".join(map(_erlang, value)) + "}"
    assert isinstance(value, list)
    return "[" + ",".join(map(_erlang, value)) + "]"


def _term(rnd: random.Random, depth: int = 0) -> object:
    kind = rnd.randrange(10 if depth < 3 else 6)
    if kind == 0:
        return bytes(rnd.randrange(256) for _ in range(rnd.randrange(40)))
    if kind == 1:
        return rnd.choice([None, True, False, Atom(rnd.choice(["longstr", "signedint", "a", "é", "x" * 30]))])
    if kind == 2:  # small, 28-bit edges (wider ones hash as bignums), bignums
        edges = [2**27 - 1, 2**27, -(2**27), -(2**27) - 1, 2**64 - 1, 2**64]
        return rnd.choice(
            [rnd.randrange(-300, 300), rnd.randrange(-(2**30), 2**30), rnd.randrange(-(2**70), 2**70), *edges]
        )
    if kind == 3:
        return rnd.choice([0.0, -0.0, 1.5, rnd.uniform(-1e10, 1e10), 1e300])
    if kind in (4, 5):
        return "".join(chr(rnd.randrange(32, 0x500)) for _ in range(rnd.randrange(30)))
    if kind in (6, 7):
        return tuple(_term(rnd, depth + 1) for _ in range(rnd.randrange(4)))
    return [
        _term(rnd, depth + 1) if rnd.random() < 0.5 else rnd.randrange(256) for _ in range(rnd.randrange(9))
    ]


def _run(script: str, data: str, tmp_path: Path) -> list[str]:
    assert ESCRIPT is not None
    (tmp_path / "s.escript").write_text("#!/usr/bin/env escript\n" + script)
    (tmp_path / "data").write_text(data)
    done = subprocess.run(
        [ESCRIPT, str(tmp_path / "s.escript"), str(tmp_path / "data")],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout.splitlines()


@needs_erlang
def test_phash2_matches_erlang_on_generated_terms(tmp_path: Path) -> None:
    rnd = random.Random(18)
    terms = [_term(rnd) for _ in range(3000)]
    terms += [[], (), b"", [b"a"], "", "order.42", Atom("undefined"), [1, 2, 3], [300, 1, 2], [b"k", b"c"]]
    lines = _run(_PHASH2_SCRIPT, "".join(_erlang(t) + ".\n" for t in terms), tmp_path)
    expected = [tuple(map(int, line.split())) for line in lines]
    observed = [(phash2(t), phash2(t, 1000)) for t in terms]
    mismatches = [(t, e, o) for t, e, o in zip(terms, expected, observed, strict=True) if e != o]
    assert mismatches == []


@needs_erlang
def test_exs1024_draws_match_erlang_rand(tmp_path: Path) -> None:
    seeds = [n * 7919 % PHASH2_RANGE for n in range(1500)] + [-5, 2**40 + 3]
    lines = _run(_RAND_SCRIPT, "[" + ",".join(map(str, seeds)) + "].\n", tmp_path)
    for seed, line in zip(seeds, lines, strict=True):
        expected = [float(x) for x in line.strip("[]").split(",")]
        assert _more_draws(seed, 40) == expected, seed
        assert exs1024_uniforms(exs1024_seed(seed, seed, seed)) == expected[:15], seed


def test_atom_hash_is_hashpjw_of_the_name() -> None:
    # hashpjw by hand for a two-letter name: (ord("a") << 4) + ord("b")
    assert atom_hash("ab") == (ord("a") << 4) + ord("b")
    assert phash2(Atom("ab")) == atom_hash("ab")  # a top-level atom is its table hash


def test_jump_hash_stays_in_range_and_moves_few_keys_when_a_bucket_is_added() -> None:
    keys = [phash2(f"k-{n}") for n in range(2000)]
    before = [jump_consistent_hash(k, 10) for k in keys]
    after = [jump_consistent_hash(k, 11) for k in keys]
    assert all(0 <= b < 10 for b in before)
    moved = [(b, a) for b, a in zip(before, after, strict=True) if b != a]
    assert all(a == 10 for _, a in moved)  # keys only ever move to the new bucket
    assert 100 < len(moved) < 300  # about 1/11 of them
    assert jump_consistent_hash(keys[0], 1) == 0
    assert 0 <= jump_consistent_hash(keys[0], 10**7) < 10**7  # past the 15 draws of the fast path
