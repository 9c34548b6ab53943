"""Benchmarks that judge Mnemo: LoCoMo, LongMemEval and BEAM."""
