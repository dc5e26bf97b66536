"""The tiered merge policy keeps few segments and rewrites each chunk few times."""

from ragloom.segments.merge_policy import level, plan_merge


def _simulate(writes: int, write_size: int, factor: int, floor: int):
    sizes: list[int] = []
    rewritten = 0
    for _ in range(writes):
        sizes.append(write_size)
        while (plan := plan_merge(sizes, [0] * len(sizes), factor, floor)) is not None:
            i, j = plan
            merged = sum(sizes[i:j])
            rewritten += merged
            sizes[i:j] = [merged]
    return sizes, rewritten


def test_segments_stay_few_and_each_chunk_is_rewritten_log_times() -> None:
    sizes, rewritten = _simulate(writes=5000, write_size=20, factor=10, floor=20)
    total = 5000 * 20
    assert sum(sizes) == total
    assert len(sizes) <= 9 * 4  # at most factor-1 segments per level, 4 levels
    assert rewritten <= total * 4  # about log10(5000) rewrites per chunk


def test_levels_and_deleted_segments() -> None:
    assert level(5, 10, 100) == 0 and level(1000, 10, 100) == 1 and level(999, 10, 100) == 0
    assert plan_merge([100] * 9, [0] * 9, 10, 100) is None
    assert plan_merge([1000, 100, 100], [0, 80, 0], 10, 100) == (1, 2)


def test_consolidation_merges_the_newest_small_files_within_the_cap() -> None:
    from dataclasses import dataclass

    from ragloom.segments.schedule import consolidation_plan

    @dataclass
    class Seg:
        n: int

    @dataclass
    class P:
        segment: Seg
        n_dead: int = 0

    @dataclass
    class V:
        parts: tuple
        files: int

    def plan(sizes, dead=None, memory=0, cap=100):
        dead = dead or [0] * len(sizes)
        parts = tuple(P(Seg(s), d) for s, d in zip(sizes, dead)) + (P(Seg(5)),) * memory
        return consolidation_plan(V(parts, len(sizes)), cap)

    assert plan([20, 20, 20, 20, 20]) == (0, 5)  # 100 chunks: one segment
    assert plan([90, 20, 20]) == (1, 3)  # the large one stays
    assert plan([60, 50], dead=[0, 20]) == (0, 2)  # deleted chunks do not count
    assert plan([100]) is None and plan([]) is None and plan([70, 40]) is None
    assert plan([20, 20], memory=2) == (0, 2)  # in-memory segments are not files
