from mini_harness.cli import main

main()
