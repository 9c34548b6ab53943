"""Training a deriver of Mnemo's own: the data pipeline and supervised fine-tuning."""
