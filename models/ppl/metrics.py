"""Keypoint metrics for unsupervised detectors (the protocols PPL's Tab. 1 follows).

* ``regression_error``: a linear map from the N detections to the K ground-truth joints is
  fitted on training images, and the test error is the mean L2 over joints in units of the
  image size, times 100 (AutoLink's protocol, which the paper cites);
* ``matching_error``: each GT joint takes one distinct detected keypoint by min-cost
  assignment of mean distances on the training set (the release's test.py matches by min-cost
  flow); error as above;
* ``procrustes``: the shape distance between the template (mapped by the fitted regression)
  and the mean GT pose, after similarity alignment;
* ``link_recall``: share of the true tree edges among the top ``K - 1`` learned links.
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.spatial import procrustes as _procrustes


def fit_regression(det: np.ndarray, gt: np.ndarray, ridge: float = 1e-3) -> np.ndarray:
    """Least-squares map (N*2 + 1, K*2) from flattened detections (with bias) to GT."""
    x = np.concatenate([det.reshape(len(det), -1), np.ones((len(det), 1))], 1)
    y = gt.reshape(len(gt), -1)
    a = x.T @ x + ridge * np.eye(x.shape[1])
    return np.linalg.solve(a, x.T @ y)


def apply_regression(coef: np.ndarray, det: np.ndarray) -> np.ndarray:
    x = np.concatenate([det.reshape(len(det), -1), np.ones((len(det), 1))], 1)
    return (x @ coef).reshape(len(det), -1, 2)


def l2_error(pred: np.ndarray, gt: np.ndarray) -> float:
    """Mean L2 per joint in units of the image size, times 100 (coordinates in [-1, 1] span
    two units, hence the 1/2)."""
    return float(np.linalg.norm(pred - gt, axis=-1).mean() / 2 * 100)


def regression_error(det_tr, gt_tr, det_te, gt_te) -> tuple[float, np.ndarray]:
    coef = fit_regression(det_tr, gt_tr)
    return l2_error(apply_regression(coef, det_te), gt_te), coef


def match(det_tr: np.ndarray, gt_tr: np.ndarray) -> np.ndarray:
    """For each GT joint, the detected keypoint assigned to it (K,), needs N >= K."""
    if det_tr.shape[1] < gt_tr.shape[1]:
        raise ValueError(f"matching needs a keypoint per joint: {det_tr.shape[1]} keypoints, "
                         f"{gt_tr.shape[1]} joints")
    cost = np.linalg.norm(det_tr[:, :, None] - gt_tr[:, None], axis=-1).mean(0)   # (N, K)
    rows, cols = linear_sum_assignment(cost)
    out = np.empty(gt_tr.shape[1], dtype=int)
    out[cols] = rows
    return out


def matching_error(det_tr, gt_tr, det_te, gt_te) -> float:
    return l2_error(det_te[:, match(det_tr, gt_tr)], gt_te)


def procrustes(a: np.ndarray, b: np.ndarray) -> float:
    """Disparity (sum of squared differences after similarity alignment, both shapes scaled
    to unit norm) between point sets (K, 2)."""
    return float(_procrustes(np.asarray(b, float), np.asarray(a, float))[2])


def nearest_joint(det_tr: np.ndarray, gt_tr: np.ndarray) -> np.ndarray:
    """For each detected keypoint, the GT joint nearest on average (N,)."""
    cost = np.linalg.norm(det_tr[:, :, None] - gt_tr[:, None], axis=-1).mean(0)
    return cost.argmin(1)


def link_recall(w: np.ndarray, joint_of: np.ndarray, edges) -> float:
    """Share of ``edges`` (joint pairs) covered by the top ``len(edges)`` links of ``w``
    (keypoint pairs i < j), each keypoint standing for ``joint_of[i]``."""
    n = len(w)
    i, j = np.triu_indices(n, 1)
    top = np.argsort(-w[i, j], kind="stable")[: len(edges)]
    true = {frozenset(e) for e in edges}
    found = {frozenset((joint_of[i[t]], joint_of[j[t]])) for t in top} & true
    return len(found) / len(true)
