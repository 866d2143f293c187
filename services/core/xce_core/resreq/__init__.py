"""Resource requirements (LSF ``-R`` strings): the request model, the parser, and the
select-expression evaluator."""
