"""The consistent-hash exchange's bucket choice: jump consistent hashing driven by OTP's ``rand`` exs1024.

rabbit_exchange_type_consistent_hash (3.8 to 4.x, unchanged) picks bucket ``jump_consistent_hash(K, N)``
(Lamping and Veach's algorithm) with its random numbers from ``rand:seed_s(exs1024, {K, K, K})`` and
``rand:uniform_s/1``, K being an integer (``erlang:phash2`` of the hashed value unless that value is an
integer). exs1024 is Xorshift1024* seeded through Xorshift64*; OTP keeps deprecated algorithms bit-stable, and
its ``uniform_s`` for exs1024 is the old ``V / 2**64``. Checked against OTP 25 (tests/unit/core).
"""

from __future__ import annotations

_M21 = (1 << 21) - 1
_M64 = (1 << 64) - 1
_TWO_POW_MINUS64 = 2.0**-64


def _exs64_next(r: int) -> tuple[int, int]:
    """Xorshift64* (rand exs64_next): (output, next state)."""
    r ^= r >> 12
    r ^= (r << 25) & _M64
    r ^= r >> 27
    return (r * 2685821657736338717) & _M64, r


def exs1024_seed(a1: int, a2: int, a3: int) -> list[int]:
    """``rand:seed_s(exs1024, {A1, A2, A3})``'s 16 state words, in OTP's list order (the last generated
    first)."""
    b1 = (((a1 & _M21) + 1) * 2097131) & _M21
    b2 = (((a2 & _M21) + 1) * 2097133) & _M21
    b3 = (((a3 & _M21) + 1) * 2097143) & _M21
    r = (b1 << 43) | (b2 << 22) | (b3 << 1) | 1
    words: list[int] = []
    for _ in range(16):
        x, r = _exs64_next(r)
        words.append(x)
    words.reverse()
    return words


def exs1024_uniforms(state: list[int]) -> list[float]:
    """The first ``len(state) - 1`` floats ``rand:uniform_s`` draws from a fresh state (enough for a jump
    hash: it draws about ln(N) + 1); OTP's front list never wraps that soon, so no wrap is handled."""
    out: list[float] = []
    s1 = state[0]
    for index in range(1, len(state)):
        s0, s1 = s1, state[index]
        # Xorshift1024*: s1 ^= s1 << 31; s1 ^= s1 >> 11; s0 ^= s0 >> 30; the new word replaces s1
        s11 = s1 ^ ((s1 << 31) & _M64)
        s12 = s11 ^ (s11 >> 11)
        s1 = (s0 ^ (s0 >> 30)) ^ s12
        out.append(((s1 * 1181783497276652981) & _M64) * _TWO_POW_MINUS64)
    return out


def jump_consistent_hash(key: int, buckets: int) -> int:
    """The bucket in 0..buckets-1 for integer ``key`` (the plugin's jump_consistent_hash/2).

    Hot path: the seed words and the draws are computed inline, and only the draws used (about ln(N) + 1).
    """
    if buckets == 1:
        return 0
    state = exs1024_seed(key, key, key)
    b, j = -1, 0
    s1 = state[0]
    index = 1
    while j < buckets:
        b = j
        if index == 16:  # 15 draws reach millions of buckets; past that, the general stream
            return _jump_from(key, buckets, b, index - 1)
        s0, s1 = s1, state[index]
        index += 1
        s11 = s1 ^ ((s1 << 31) & _M64)
        s1 = (s0 ^ (s0 >> 30)) ^ s11 ^ (s11 >> 11)
        r = ((s1 * 1181783497276652981) & _M64) * _TWO_POW_MINUS64
        j = int((b + 1) / r) if r else buckets  # r is 0.0 once in 2**64 draws (Erlang: badarith)
    return b


def _jump_from(key: int, buckets: int, b: int, used: int) -> int:
    """Continue a jump hash after ``used`` draws, on OTP's wrapped stream."""
    draws = _more_draws(key, used + 64)
    index = used
    j = b  # b was just set to j; the next draw decides
    while j < buckets:
        b = j
        r = draws[index]
        index += 1
        j = int((b + 1) / r) if r else buckets
    return b


def _more_draws(key: int, count: int) -> list[float]:
    """``count`` draws, wrapping OTP's two-list state as exs1024_next does (for huge bucket counts)."""
    front = exs1024_seed(key, key, key)
    back: list[int] = []
    out: list[float] = []
    while len(out) < count:
        if len(front) == 1:
            front = [front[0], *reversed(back)]
            back = []
        s0, s1 = front[0], front[1]
        s11 = s1 ^ ((s1 << 31) & _M64)
        s12 = s11 ^ (s11 >> 11)
        ns1 = (s0 ^ (s0 >> 30)) ^ s12
        out.append(((ns1 * 1181783497276652981) & _M64) * _TWO_POW_MINUS64)
        front = [ns1, *front[2:]]
        back.insert(0, s0)
    return out
