; Object-like and function-like macros, and enumerators.
(preproc_def
  name: (identifier) @define.name
  value: (preproc_arg)? @define.value) @define

(preproc_function_def
  name: (identifier) @macro.name
  parameters: (preproc_params) @macro.params
  value: (preproc_arg)? @macro.value) @macro

(enumerator
  name: (identifier) @enum.name
  value: (_)? @enum.value) @enum
