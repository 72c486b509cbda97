"""A home is a folder of one machine: two machines may each have a ``~/.dsh``."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("live", "0002_collector"),
    ]

    operations = [
        migrations.AlterField(
            model_name="collectorlease",
            name="path",
            field=models.TextField(help_text="The home's absolute path on its host."),
        ),
        migrations.AddConstraint(
            model_name="collectorlease",
            constraint=models.UniqueConstraint(
                fields=("host", "path"), name="one_lease_per_home_folder"
            ),
        ),
    ]
