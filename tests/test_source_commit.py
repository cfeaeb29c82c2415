"""s2r.identity.source_commit: the checkout's commit read from its .git files."""

from __future__ import annotations

from s2r.identity import source_commit

SHA = "0123456789abcdef0123456789abcdef01234567"


def test_a_detached_head_a_loose_ref_and_a_packed_ref(tmp_path):
    git = tmp_path / ".git"
    (git / "refs" / "heads").mkdir(parents=True)
    (git / "HEAD").write_text(SHA + "\n")
    assert source_commit(tmp_path) == SHA
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    (git / "refs" / "heads" / "main").write_text(SHA.replace("0", "a") + "\n")
    assert source_commit(tmp_path) == SHA.replace("0", "a")
    (git / "refs" / "heads" / "main").unlink()
    (git / "packed-refs").write_text(f"# pack-refs\n{SHA} refs/heads/main\n")
    assert source_commit(tmp_path) == SHA


def test_a_worktree_follows_its_gitdir_and_common_dir(tmp_path):
    common = tmp_path / "repo.git"
    (common / "refs" / "heads").mkdir(parents=True)
    (common / "refs" / "heads" / "topic").write_text(SHA)
    wt_git = common / "worktrees" / "wt"
    wt_git.mkdir(parents=True)
    (wt_git / "HEAD").write_text("ref: refs/heads/topic\n")
    (wt_git / "commondir").write_text("../..\n")
    checkout = tmp_path / "wt"
    checkout.mkdir()
    (checkout / ".git").write_text(f"gitdir: {wt_git}\n")
    assert source_commit(checkout) == SHA


def test_no_checkout_or_garbage_is_none(tmp_path):
    assert source_commit(tmp_path) is None
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("ref: refs/heads/gone\n")
    assert source_commit(tmp_path) is None
    (tmp_path / ".git" / "HEAD").write_text("not a sha\n")
    assert source_commit(tmp_path) is None
