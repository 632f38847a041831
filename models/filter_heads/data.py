"""Synthetic list-filtering language: vocabulary, SelectOne prompts, counterfactual pairs.

The objects dataset of the paper (16 categories of single-concept items) shrunk to 8
categories x 12 items, every item one token. A prompt lists 3-7 labelled options, exactly
one of which belongs to the asked category. Two tasks of the paper (Sec. 4) share the
lists and differ in the last word: SelectOne ("Answer" -> the item itself, the default
and the paper's main task) and SelectOne-MCQ ("Label" -> the option's label)::

    after : <bos> Options : a:apple , b:car , c:chair . Which is <cat> ? Answer   -> apple
    before: <bos> Which is <cat> ? Options : a:apple , b:car , c:chair . Label    -> a

A tiny model solves the item task largely through a direct predicate -> category-items path
(the room's README, "How the task was chosen", says what was measured and tried), so
query patching competes with it; MCQ has no such shortcut but did not train within the CPU
budget. ``task="mcq"`` is therefore implemented and tested for shape, not used by the
experiment.

Three list formats (the paper's single line / bulleted / numbered option styles)::

    comma   : a:i1 , b:i2 , c:i3 .
    bullet  : \\n - a:i1 \\n - b:i2 \\n - c:i3 .
    numbered: 1:i1 2:i2 3:i3 .            (digit labels: the answer is a digit)

A labelled option "a:apple" is ONE position whose input is the sum of the item's and the
label's token embeddings (``Template.tags``), as if the tokenizer had one token for
"a) apple": it spares a model trained from scratch the previous-token head that would
otherwise have to bind a separate label token to its item.

Every prompt of one batch has the same format, order and number of options, so a batch is
a fixed template whose item and category slots are filled by array indexing (no Python loop
per sample).

The shortcut-free variant (issue 34): ``per_item`` > 1 puts every item in several
categories (:func:`membership`), and ``pred_last`` ends a question-after prompt at the
predicate, so the predicate token sits only at the query position the patch reads::

    pred_last: <bos> Options : a:apple , b:car , c:chair . Which is <cat>   -> apple

Question-before prompts keep "? Answer" after the list (the predicate must precede it).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim.errors import ModelError

CATEGORIES = ("fruit", "vehicle", "furniture", "animal", "instrument", "clothing",
              "flower", "tool")
ITEMS = {
    "fruit": "apple banana cherry grape mango lemon peach pear plum kiwi melon fig",
    "vehicle": "car bus truck bike train plane boat tram van taxi scooter ship",
    "furniture": "chair table sofa bed desk shelf stool bench dresser couch cabinet crib",
    "animal": "dog cat horse lion tiger bear wolf fox deer rabbit zebra camel",
    "instrument": "piano guitar violin drum flute trumpet harp cello banjo oboe tuba organ",
    "clothing": "shirt jacket sock hat scarf glove dress skirt coat boot sweater vest",
    "flower": "rose tulip lily daisy orchid iris lotus poppy violet peony aster dahlia",
    "tool": "hammer saw wrench drill pliers chisel axe shovel rake file ruler level",
}
N_CAT = len(CATEGORIES)
N_ITEM = 12                                     # items per category
LETTERS = ("a", "b", "c", "d", "e", "f", "g")
DIGITS = ("1", "2", "3", "4", "5", "6", "7")
LABELS = LETTERS + DIGITS
TEMPLATE_WORDS = ("<bos>", "Options", ":", ",", ".", "-", "\\n", "Which", "is", "?", "Answer",
                  "Label",
                  *LETTERS, *DIGITS)
FORMATS = ("comma", "bullet", "numbered")
ORDERS = ("after", "before")
TASKS = ("mcq", "item")         # answer = the option's label / the item itself
MIN_OPTIONS, MAX_OPTIONS = 3, 7                 # the paper's 2-6 distractors

VOCAB: tuple[str, ...] = (TEMPLATE_WORDS + CATEGORIES
                          + tuple(w for c in CATEGORIES for w in ITEMS[c].split()))
TOK = {w: i for i, w in enumerate(VOCAB)}
CAT0 = TOK[CATEGORIES[0]]                       # category token of category c: CAT0 + c
ITEM0 = CAT0 + N_CAT                            # item j of category c: ITEM0 + c*N_ITEM + j
VOCAB_SIZE = len(VOCAB)
if len(set(VOCAB)) != VOCAB_SIZE:               # a duplicate word would merge two tokens
    raise RuntimeError("filter_heads.data: duplicate word in the vocabulary")


N_ITEMS = N_CAT * N_ITEM                        # item tokens ITEM0 .. ITEM0 + N_ITEMS - 1


def membership(per_item: int = 1) -> np.ndarray:
    """(N_ITEMS, N_CAT) bool: which categories each item belongs to.

    Item j of home category c belongs to c and to the ``per_item - 1`` categories
    ``(c + 1 + (j + s) % (N_CAT - 1)) % N_CAT``, s = 0 .. per_item - 2: distinct and never c,
    and spread so that every category gains ~``N_ITEM * (per_item - 1)`` foreign members
    (a fixed rule, not a draw: every run and test sees the same world). With several
    categories per item no single "category -> its items" direction picks the answer out
    of the list: the model has to match the predicate against each listed item.
    """
    if not 1 <= int(per_item) <= N_CAT:
        raise ModelError(f"categories per item per_item = {per_item}: expected 1..{N_CAT}")
    m = np.zeros((N_CAT, N_ITEM, N_CAT), bool)
    c = np.arange(N_CAT)[:, None]
    j = np.arange(N_ITEM)[None, :]
    m[c, j, c] = True
    for s in range(int(per_item) - 1):
        m[c, j, (c + 1 + (j + s) % (N_CAT - 1)) % N_CAT] = True
    return m.reshape(N_ITEMS, N_CAT)


def item_token(cat: np.ndarray, idx: np.ndarray) -> np.ndarray:
    return ITEM0 + cat * N_ITEM + idx


def category_of(token: np.ndarray) -> np.ndarray:
    """Category index of item tokens."""
    return (np.asarray(token) - ITEM0) // N_ITEM


def decode(tokens, tags=None) -> str:
    """Readable prompt; options with a label tag print as ``label:item``."""
    tags = np.zeros(len(tokens), np.int64) if tags is None else tags
    return " ".join((VOCAB[int(g)] + ":" if g else "") + VOCAB[int(t)]
                    for t, g in zip(tokens, tags, strict=True))


@dataclass(frozen=True)
class Template:
    """Token template of one (format, order, n) prompt shape; slots are filled per sample."""

    tokens: np.ndarray      # (T,) int64, item and category slots hold placeholder 0
    item_pos: np.ndarray    # (n,) positions of the option slots, in list order
    cat_pos: int            # position of the category (predicate) token
    labels: np.ndarray      # (n,) label tokens of the options (the answer vocabulary)
    tags: np.ndarray        # (T,) the label token at each option position, 0 elsewhere:
                            # the model adds that token's embedding there


def template(fmt: str, order: str, n: int, task: str = "mcq",
             pred_last: bool = False) -> Template:
    """The prompt template for ``n`` options in list format ``fmt``, question ``order`` and
    ``task`` (the last word: "Label" asks for the label, "Answer" for the item).
    ``pred_last``: the question-after prompt ends at the predicate (item task only)."""
    if pred_last and (order != "after" or task != "item"):
        raise ModelError(f"pred_last with order {order!r} and task {task!r}: only "
                         "question-after item prompts can end at the predicate (a "
                         "question-before prompt must name it before the list; the label "
                         "task needs its last word)")
    if task not in TASKS:
        raise ModelError(f"task {task!r}: expected one of {', '.join(TASKS)}")
    if fmt not in FORMATS:
        raise ModelError(f"list format {fmt!r}: expected one of {', '.join(FORMATS)}")
    if order not in ORDERS:
        raise ModelError(f"question order {order!r}: expected one of {', '.join(ORDERS)}")
    if not MIN_OPTIONS <= n <= MAX_OPTIONS:
        raise ModelError(f"number of options n = {n}: expected {MIN_OPTIONS}..{MAX_OPTIONS} "
                         "(the paper's 2-6 distractors plus the answer)")
    listing: list[str | None] = ["Options", ":"]
    labels = DIGITS[:n] if fmt == "numbered" else LETTERS[:n]
    for k in range(n):
        if fmt == "comma":
            listing += ([","] if k else []) + [None]
        elif fmt == "bullet":
            listing += ["\\n", "-", None]
        else:
            listing += [None]
    listing.append(".")
    question: list[str | None] = ["Which", "is", "<cat>", "?"]
    words = (["<bos>"] + (listing + question if order == "after" else question + listing)
             + ["Label" if task == "mcq" else "Answer"])
    if pred_last:
        words = words[:-2]                      # drop "?" and "Answer": <cat> is last
    toks = np.array([TOK[w] if w is not None and w != "<cat>" else 0 for w in words], np.int64)
    item_pos = np.array([i for i, w in enumerate(words) if w is None], np.int64)
    tags = np.zeros(len(words), np.int64)
    tags[item_pos] = [TOK[w] for w in labels]
    return Template(toks, item_pos, words.index("<cat>"),
                    np.array([TOK[w] for w in labels], np.int64), tags)


@dataclass
class Batch:
    """SelectOne-MCQ prompts of one shape: tokens, their options, predicate and answer."""

    tokens: np.ndarray      # (B, T) int64
    items: np.ndarray       # (B, n) item tokens in list order
    predicate: np.ndarray   # (B,) category index asked for
    answer_slot: np.ndarray  # (B,) index of the one item of the predicate category
    fmt: str
    order: str
    task: str = "mcq"
    per_item: int = 1       # categories per item (:func:`membership`)
    pred_last: bool = False  # the prompt ends at the predicate (:func:`template`)

    @property
    def template(self) -> Template:
        return template(self.fmt, self.order, self.items.shape[1], self.task, self.pred_last)

    @property
    def tags(self) -> np.ndarray:
        """(B, T) option-label tags (see :class:`Template`)."""
        return np.tile(self.template.tags, (len(self.tokens), 1))

    @property
    def options(self) -> np.ndarray:
        """(B, n) answer candidates: the label tokens (mcq) or the item tokens (item)."""
        if self.task == "item":
            return self.items
        return np.tile(self.template.labels, (len(self.tokens), 1))

    @property
    def answer(self) -> np.ndarray:
        """(B,) answer token: the label (mcq) or the item (item) of the matching option."""
        return self.options[np.arange(len(self.tokens)), self.answer_slot]


def _fill(tmpl: Template, items: np.ndarray, predicate: np.ndarray) -> np.ndarray:
    tokens = np.tile(tmpl.tokens, (len(items), 1))
    tokens[:, tmpl.item_pos] = items
    tokens[:, tmpl.cat_pos] = CAT0 + predicate
    return tokens


def _slot_categories(rng: np.random.Generator, fixed: np.ndarray, n: int) -> np.ndarray:
    """(B, n) option categories: the columns of ``fixed`` first, then distractors drawn
    with replacement from the categories not in ``fixed``, then shuffled per row."""
    b, k = fixed.shape
    allowed = np.ones((b, N_CAT), bool)
    allowed[np.arange(b)[:, None], fixed] = False
    # draw among allowed categories: rank random keys, forbidden ones pushed last
    keys = np.where(allowed[:, None, :], rng.random((b, n - k, N_CAT)), 2.0)
    n_allowed = allowed.sum(1)
    pick = (rng.random((b, n - k)) * n_allowed[:, None]).astype(np.int64)
    distract = np.take_along_axis(np.argsort(keys, axis=2), pick[..., None], axis=2)[..., 0]
    cats = np.concatenate([fixed, distract], axis=1)
    order = np.argsort(rng.random((b, n)), axis=1)
    return np.take_along_axis(cats, order, axis=1)


def _rank_in_category(cats: np.ndarray) -> np.ndarray:
    """(B, n) how many earlier slots of the same row share the slot's category."""
    onehot = cats[..., None] == np.arange(N_CAT)
    return np.take_along_axis(np.cumsum(onehot, axis=1) - 1, cats[..., None], axis=2)[..., 0]


def _check_batch_args(b: int, n: int):
    if int(b) < 1:
        raise ModelError(f"batch size {b}: expected >= 1")
    if not MIN_OPTIONS <= n <= MAX_OPTIONS:
        raise ModelError(f"number of options n = {n}: expected {MIN_OPTIONS}..{MAX_OPTIONS}")


def _draw(rng: np.random.Generator, allowed: np.ndarray, k: int) -> np.ndarray:
    """(B, k) distinct item indices per row, uniform among the row's ``allowed`` (B, N_ITEMS)
    items: the first k of a random ranking in which forbidden items come last."""
    if k and int(allowed.sum(1).min()) < k:
        raise ModelError(f"item draw: {k} items needed but a row allows only "
                         f"{int(allowed.sum(1).min())}")
    keys = np.where(allowed, rng.random(allowed.shape), 2.0)
    return np.argsort(keys, axis=1)[:, :k]


def _shuffle(rng: np.random.Generator, items: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows of ``items`` shuffled, and where each row's first column went."""
    order = np.argsort(rng.random(items.shape), axis=1)
    return np.take_along_axis(items, order, axis=1), np.argmin(order, axis=1)


def _select_one_multi(rng, b, n, fmt, order, task, per_item, pred_last) -> Batch:
    """SelectOne when items belong to several categories: one option of the predicate,
    the others of no category the predicate shares."""
    tmpl = template(fmt, order, n, task, pred_last)
    pred = rng.integers(0, N_CAT, b)
    inside = membership(per_item)[:, pred].T                            # (B, N_ITEMS)
    picks = np.concatenate([_draw(rng, inside, 1), _draw(rng, ~inside, n - 1)], axis=1)
    idx, slot = _shuffle(rng, picks)
    items = ITEM0 + idx
    return Batch(_fill(tmpl, items, pred), items, pred, slot, fmt, order, task, per_item,
                 pred_last)


def select_one(rng: np.random.Generator, b: int, n: int, fmt: str = "comma",
               order: str = "after", task: str = "mcq", per_item: int = 1,
               pred_last: bool = False) -> Batch:
    """``b`` random SelectOne prompts with ``n`` options (``per_item`` categories per item;
    ``pred_last``: prompts end at the predicate)."""
    _check_batch_args(b, n)
    if per_item != 1 or pred_last:
        return _select_one_multi(rng, b, n, fmt, order, task, per_item, pred_last)
    tmpl = template(fmt, order, n, task)
    pred = rng.integers(0, N_CAT, b)
    cats = _slot_categories(rng, pred[:, None], n)
    perm = np.argsort(rng.random((b, N_CAT, N_ITEM)), axis=2)   # items without repeats
    idx = perm[np.arange(b)[:, None], cats, _rank_in_category(cats)]
    items = item_token(cats, idx)
    slot = np.argmax(cats == pred[:, None], axis=1)
    return Batch(_fill(tmpl, items, pred), items, pred, slot, fmt, order, task)


@dataclass
class Pairs:
    """Counterfactual pairs (paper Sec. 3): source and destination prompts.

    The predicates differ, the option lists are disjoint, and the destination list holds
    exactly one item of each predicate: c_targ at ``target_slot`` (what the source
    predicate picks in the destination list) and the destination's own answer.
    """

    src: Batch
    dest: Batch
    target_slot: np.ndarray  # (B,) slot of c_targ in the destination list

    @property
    def target(self) -> np.ndarray:
        """(B,) label token of c_targ in the destination prompt."""
        return self.dest.options[np.arange(len(self.target_slot)), self.target_slot]

    @property
    def target_item(self) -> np.ndarray:
        return self.dest.items[np.arange(len(self.target_slot)), self.target_slot]


def _pairs_multi(rng, b, n_src, n_dest, fmt_src, fmt_dest, order, task_src, task_dest,
                 per_item, pred_last) -> Pairs:
    """Counterfactual pairs when items belong to several categories: the destination holds
    c_targ (of psi_src, not psi_dest), its own answer (of psi_dest, not psi_src) and
    distractors of neither; the source holds one item of psi_src and others not of it, none
    of them in the destination list."""
    members = membership(per_item)
    psi_src = rng.integers(0, N_CAT, b)
    psi_dest = (psi_src + rng.integers(1, N_CAT, b)) % N_CAT          # != psi_src
    a, d = members[:, psi_src].T, members[:, psi_dest].T               # (B, N_ITEMS)
    dest = np.concatenate([_draw(rng, a & ~d, 1), _draw(rng, d & ~a, 1),
                           _draw(rng, ~a & ~d, n_dest - 2)], axis=1)
    order_d = np.argsort(rng.random(dest.shape), axis=1)
    dest = np.take_along_axis(dest, order_d, axis=1)
    target, slot_d = np.argmin(order_d, axis=1), np.argmax(order_d == 1, axis=1)
    used = np.zeros((b, N_ITEMS), bool)
    used[np.arange(b)[:, None], dest] = True
    src, slot_s = _shuffle(rng, np.concatenate([_draw(rng, a & ~used, 1),
                                                _draw(rng, ~a & ~used, n_src - 1)], axis=1))
    items_s, items_d = ITEM0 + src, ITEM0 + dest
    s = Batch(_fill(template(fmt_src, order, n_src, task_src, pred_last), items_s, psi_src),
              items_s, psi_src, slot_s, fmt_src, order, task_src, per_item, pred_last)
    t = Batch(_fill(template(fmt_dest, order, n_dest, task_dest, pred_last), items_d,
                    psi_dest), items_d, psi_dest, slot_d, fmt_dest, order, task_dest,
              per_item, pred_last)
    return Pairs(s, t, target)


def counterfactual_pairs(rng: np.random.Generator, b: int, n_src: int, n_dest: int,
                         fmt_src: str = "comma", fmt_dest: str = "comma",
                         order: str = "after", task_src: str = "mcq",
                         task_dest: str = "mcq", per_item: int = 1,
                         pred_last: bool = False) -> Pairs:
    """``b`` counterfactual (source, destination) SelectOne pairs."""
    _check_batch_args(b, n_src)
    _check_batch_args(b, n_dest)
    if per_item != 1 or pred_last:
        return _pairs_multi(rng, b, n_src, n_dest, fmt_src, fmt_dest, order, task_src,
                            task_dest, per_item, pred_last)
    psi_src = rng.integers(0, N_CAT, b)
    psi_dest = (psi_src + rng.integers(1, N_CAT, b)) % N_CAT          # != psi_src
    cats_d = _slot_categories(rng, np.stack([psi_src, psi_dest], 1), n_dest)
    cats_s = _slot_categories(rng, psi_src[:, None], n_src)
    perm = np.argsort(rng.random((b, N_CAT, N_ITEM)), axis=2)
    rows = np.arange(b)[:, None]
    # disjoint lists: the destination takes each category's items from the front of the
    # row's permutation and the source from the back; a category fills at most
    # n_dest - 1 + n_src - 1 <= 12 = N_ITEM slots in the two lists together.
    items_d = item_token(cats_d, perm[rows, cats_d, _rank_in_category(cats_d)])
    items_s = item_token(cats_s, perm[rows, cats_s, N_ITEM - 1 - _rank_in_category(cats_s)])
    target = np.argmax(cats_d == psi_src[:, None], axis=1)
    slot_d = np.argmax(cats_d == psi_dest[:, None], axis=1)
    slot_s = np.argmax(cats_s == psi_src[:, None], axis=1)
    src = Batch(_fill(template(fmt_src, order, n_src, task_src), items_s, psi_src), items_s,
                psi_src, slot_s, fmt_src, order, task_src)
    dest = Batch(_fill(template(fmt_dest, order, n_dest, task_dest), items_d, psi_dest),
                 items_d, psi_dest, slot_d, fmt_dest, order, task_dest)
    return Pairs(src, dest, target)


def with_predicate(batch: Batch, predicate: np.ndarray) -> Batch:
    """The same prompts asking for ``predicate`` instead (used by the eager-flag test: the
    destination prompt asking for the source predicate, where c_targ is the match)."""
    tokens = batch.tokens.copy()
    tokens[:, batch.template.cat_pos] = CAT0 + predicate
    match = membership(batch.per_item)[batch.items - ITEM0, predicate[:, None]]   # (B, n)
    if not np.all(match.sum(1) == 1):
        raise ModelError("with_predicate: every list must hold exactly one item of the new "
                         "predicate")
    return Batch(tokens, batch.items, predicate, np.argmax(match, axis=1), batch.fmt,
                 batch.order, batch.task, batch.per_item, batch.pred_last)
