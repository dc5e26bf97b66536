"""The tiered merge policy keeps few segments and rewrites each chunk few times."""

from ragloom.segments.policy import level, plan_merge


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
