; Places a name or a struct field gets a value.
(assignment_expression
  left: (_) @assign.left
  right: (_) @assign.right) @assign

(init_declarator
  declarator: (_) @decl.declarator
  value: (_) @decl.value) @decl

(initializer_pair
  designator: (field_designator (field_identifier) @init.field)
  value: (_) @init.value) @init
