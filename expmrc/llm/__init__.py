"""Large language models on ExpMRC: prompts, backends, reply parsing, a response cache, the OpenAI Batch
format and the run that ties them to grounding and the scorer (`expmrc llm`)."""
