; Declarations that introduce a name, with their type: locals, globals, parameters.
(declaration
  type: (_) @decl.type) @declaration

(parameter_declaration
  type: (_) @param.type
  declarator: (_)? @param.declarator) @param
