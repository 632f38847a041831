"""Filter heads' prompts (data.py): templates, SelectOne batches, counterfactual pairs, errors."""
import numpy as np
import pytest

from models.filter_heads import data
from sim.errors import ModelError


def test_vocabulary():
    # 12 template words + 7 letters + 7 digits = 26, then 8 categories and 8 x 12 items
    assert data.VOCAB_SIZE == 26 + 8 + 96 == 130
    assert (data.CAT0, data.ITEM0) == (26, 34)
    # category 1 (vehicle: car bus truck bike ...), item 3 -> 34 + 1 * 12 + 3 = 49
    assert data.item_token(np.array(1), np.array(3)) == 49 and data.VOCAB[49] == "bike"
    assert data.category_of(np.array([34, 45, 46, 129])).tolist() == [0, 0, 1, 7]


def test_prompt_layout():
    t = data.template("bullet", "before", 3)
    words = [data.VOCAB[i] for i in t.tokens]
    words[t.cat_pos] = "<cat>"
    for p in t.item_pos:
        words[p] = "_"
    assert " ".join(words) == "<bos> Which is <cat> ? Options : \\n - _ \\n - _ \\n - _ . Label"
    assert [data.VOCAB[g] for g in t.tags[t.item_pos]] == ["a", "b", "c"]
    assert np.count_nonzero(t.tags) == 3
    assert data.VOCAB[data.template("comma", "after", 3, "item").tokens[-1]] == "Answer"
    assert [data.VOCAB[i] for i in data.template("numbered", "after", 4).labels] == \
        ["1", "2", "3", "4"]


def test_batches_have_one_match_and_pairs_are_counterfactual():
    rng = np.random.default_rng(0)
    b = data.select_one(rng, 500, 7, "comma", "after")
    cats = data.category_of(b.items)
    assert np.all((cats == b.predicate[:, None]).sum(1) == 1)
    assert np.all(cats[np.arange(500), b.answer_slot] == b.predicate)
    assert np.all(np.sort(b.items, 1)[:, 1:] != np.sort(b.items, 1)[:, :-1])  # no repeats
    p = data.counterfactual_pairs(rng, 500, 7, 7, "comma", "numbered")
    cd, cs = data.category_of(p.dest.items), data.category_of(p.src.items)
    assert np.all(p.src.predicate != p.dest.predicate)
    assert np.all((cd == p.src.predicate[:, None]).sum(1) == 1)      # one c_targ
    assert np.all((cd == p.dest.predicate[:, None]).sum(1) == 1)     # one dest answer
    assert np.all((cs == p.src.predicate[:, None]).sum(1) == 1)
    assert np.all(cd[np.arange(500), p.target_slot] == p.src.predicate)
    both = np.concatenate([p.src.items, p.dest.items], 1)              # lists disjoint
    assert np.all(np.sort(both, 1)[:, 1:] != np.sort(both, 1)[:, :-1])
    assert {data.VOCAB[t] for t in p.target} <= set(data.DIGITS)


def test_with_predicate():
    rng = np.random.default_rng(2)
    p = data.counterfactual_pairs(rng, 50, 4, 6, "bullet", "bullet")
    asked = data.with_predicate(p.dest, p.src.predicate)
    # the destination list asking for the source predicate: c_targ is its one match
    assert np.array_equal(asked.answer_slot, p.target_slot)
    assert np.array_equal(asked.items, p.dest.items)
    tmpl = data.template("bullet", "after", 6, "item")
    changed = np.flatnonzero((asked.tokens != p.dest.tokens).any(0))
    assert changed.tolist() == [tmpl.cat_pos]                 # only the predicate token
    with pytest.raises(ModelError, match="exactly one item of the new predicate"):
        data.with_predicate(p.dest, (p.src.predicate + 1) % data.N_CAT)


def test_bad_inputs():
    with pytest.raises(ModelError, match="list format 'csv'"):
        data.template("csv", "after", 3)
    with pytest.raises(ModelError, match="question order 'middle'"):
        data.select_one(np.random.default_rng(0), 2, 3, "comma", "middle")
    with pytest.raises(ModelError, match=r"n = 8: expected 3..7"):
        data.select_one(np.random.default_rng(0), 2, 8)
    with pytest.raises(ModelError, match="task 'count'"):
        data.template("comma", "after", 3, "count")
    with pytest.raises(ModelError, match="batch size 0"):
        data.select_one(np.random.default_rng(0), 0, 3)


def test_membership_two_categories_per_item():
    m = data.membership(2)
    # 96 items x 2 categories = 192 memberships, 24 per category: 12 home + 12 foreign
    assert m.shape == (96, 8) and m.sum() == 192 and m.sum(0).tolist() == [24] * 8
    assert m.sum(1).tolist() == [2] * 96
    # item j = 3 of home category 1 (bike): second category (1 + 1 + 3 % 7) % 8 = 5
    assert np.flatnonzero(m[data.TOK["bike"] - data.ITEM0]).tolist() == [1, 5]
    # item 10 of category 7 (ruler): (7 + 1 + 10 % 7) % 8 = 11 % 8 = 3
    assert np.flatnonzero(m[data.TOK["ruler"] - data.ITEM0]).tolist() == [3, 7]
    assert np.array_equal(data.membership(1).argmax(1),
                          data.category_of(data.ITEM0 + np.arange(96)))
    with pytest.raises(ModelError, match="per_item = 9: expected 1..8"):
        data.membership(9)


def test_predicate_last_prompt_layout():
    t = data.template("comma", "after", 3, "item", pred_last=True)
    words = [data.VOCAB[i] for i in t.tokens]
    words[t.cat_pos] = "<cat>"
    for p in t.item_pos:
        words[p] = "_"
    assert " ".join(words) == "<bos> Options : _ , _ , _ . Which is <cat>"
    assert t.cat_pos == len(t.tokens) - 1          # the predicate is the query position
    with pytest.raises(ModelError, match="only question-after item prompts"):
        data.template("comma", "before", 3, "item", pred_last=True)
    with pytest.raises(ModelError, match="only question-after item prompts"):
        data.template("comma", "after", 3, "mcq", pred_last=True)


def test_multi_category_batches_and_pairs():
    m = data.membership(2)
    rng = np.random.default_rng(3)
    b = data.select_one(rng, 400, 7, "bullet", "after", "item", 2, True)
    inside = m[b.items - data.ITEM0, b.predicate[:, None]]             # (B, n)
    assert np.all(inside.sum(1) == 1)                                 # exactly one match
    assert np.all(inside[np.arange(400), b.answer_slot])
    assert np.all(np.sort(b.items, 1)[:, 1:] != np.sort(b.items, 1)[:, :-1])
    assert np.all(b.tokens[:, -1] == data.CAT0 + b.predicate)
    # the answer's slot is uniform over the 7 slots (not always the first drawn)
    assert len(np.unique(b.answer_slot)) == 7
    p = data.counterfactual_pairs(rng, 400, 3, 7, "comma", "numbered", "after", "item",
                                  "item", 2, True)
    rows = np.arange(400)
    in_src = m[p.dest.items - data.ITEM0, p.src.predicate[:, None]]
    in_dest = m[p.dest.items - data.ITEM0, p.dest.predicate[:, None]]
    assert np.all(in_src.sum(1) == 1) and np.all(in_dest.sum(1) == 1)
    assert np.all(in_src[rows, p.target_slot]) and np.all(in_dest[rows, p.dest.answer_slot])
    assert np.all(p.target_slot != p.dest.answer_slot)               # c_targ only in psi_src
    assert np.all(m[p.src.items - data.ITEM0, p.src.predicate[:, None]].sum(1) == 1)
    both = np.concatenate([p.src.items, p.dest.items], 1)              # lists disjoint
    assert np.all(np.sort(both, 1)[:, 1:] != np.sort(both, 1)[:, :-1])
    asked = data.with_predicate(p.dest, p.src.predicate)
    assert np.array_equal(asked.answer_slot, p.target_slot)
    assert asked.per_item == 2 and asked.pred_last
