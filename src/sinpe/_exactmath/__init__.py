"""The exact math both backends and the front share: the error-free transformations
(``dd``) and the generated constants (``constants``, ``exact_constants``,
``frequency_constants``, ``correct_constants``), the same bits the C headers carry."""
