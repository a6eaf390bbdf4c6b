from wqlint.cli import main

main()
