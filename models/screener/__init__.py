"""Screener: density of self-supervised voxel embeddings for unsupervised lesion segmentation."""
