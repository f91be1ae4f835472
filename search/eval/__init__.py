"""The retrieval benchmark: data sets, metrics, baselines and the evaluators of the
student (task-level) and teacher (step-level) retrievers."""
