"""Data preparation shared by models and estimators: affinities, distance normalisation."""
