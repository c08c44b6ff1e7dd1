"""What is computed per text and cached across runs: sentence embeddings, causal-LM scores, the shard cache they share."""
