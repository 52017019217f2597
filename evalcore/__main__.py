from evalcore.cli import main

raise SystemExit(main())
